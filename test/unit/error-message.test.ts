import { describe, expect, it } from 'vitest';
import { errorMessage } from '../../src/common/error-message.js';

describe('errorMessage', () => {
  it("says an error's message, and its cause's when it has one", () => {
    expect(errorMessage(new Error('HTTP 500'))).toBe('HTTP 500');
    expect(errorMessage(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') }))).toBe(
      'fetch failed: connect ECONNREFUSED 127.0.0.1:9',
    );
    expect(errorMessage(new Error('refused', { cause: 'not an error' }))).toBe('refused');
  });

  it('says what was thrown when it is not an error', () => {
    expect(errorMessage('no route to host')).toBe('no route to host');
    expect(errorMessage(undefined)).toBe('undefined');
  });
});
