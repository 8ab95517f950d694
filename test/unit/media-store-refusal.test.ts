import { describe, expect, it } from 'vitest';
import { isRefusal } from '../../src/media/store.js';

const answered = (httpStatusCode: number) => Object.assign(new Error('answer'), { $metadata: { httpStatusCode } });
const errno = (code: string) => Object.assign(new Error(code), { code });

describe('a media store failure that is a refusal', () => {
  it('is an S3 4xx answer other than not found, a timeout, a conflict or throttling, or a file the process may not change', () => {
    for (const status of [400, 401, 403, 405]) expect(isRefusal(answered(status)), String(status)).toBe(true);
    for (const code of ['EACCES', 'EPERM', 'EROFS']) expect(isRefusal(errno(code)), code).toBe(true);
  });

  it('is not a store that did not answer, answered 5xx or asked to slow down: it may answer in a moment', () => {
    for (const status of [404, 408, 409, 429, 500, 502, 503]) expect(isRefusal(answered(status)), String(status)).toBe(false);
    for (const code of ['ECONNREFUSED', 'ETIMEDOUT', 'EIO', 'ENOSPC']) expect(isRefusal(errno(code)), code).toBe(false);
    expect(isRefusal(new Error('socket hang up'))).toBe(false);
    expect(isRefusal(null)).toBe(false);
  });
});
