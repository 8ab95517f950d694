import { describe, expect, it } from 'vitest';
import { readableCoreMessage } from '../../src/temporal/telemetry.js';

describe("Core's log messages", () => {
  it('keep the message inside a Rust debug dump, and the dump as detail', () => {
    const text =
      'Error while polling: Status { code: Unavailable, message: "tcp connect error: Connection refused (os error 111)", details: [], metadata: MetadataMap { headers: {} } }';
    expect(readableCoreMessage(text)).toEqual({
      message: 'Error while polling: tcp connect error: Connection refused (os error 111)',
      detail: text,
    });
  });

  it('leave a plain message alone', () => {
    expect(readableCoreMessage('Worker state changed')).toEqual({ message: 'Worker state changed' });
    expect(readableCoreMessage('Polling failed (no details)')).toEqual({ message: 'Polling failed (no details)' });
  });
});
