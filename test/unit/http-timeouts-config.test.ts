import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/common/config.js';

describe('the HTTP timeouts', () => {
  it('default to 30 s for a request, 10 s for its headers, 60 s idle and 72 s between kept-alive requests', () => {
    expect(loadConfig({}).http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      idleTimeoutMs: 60_000,
      keepAliveTimeoutMs: 72_000,
    });
  });

  it('are read from their variables', () => {
    const env = {
      HTTP_REQUEST_TIMEOUT_MS: '5000',
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_IDLE_TIMEOUT_MS: '7000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '3000',
    };
    expect(loadConfig(env).http).toEqual({ requestTimeoutMs: 5000, headersTimeoutMs: 5000, idleTimeoutMs: 7000, keepAliveTimeoutMs: 3000 });
  });

  it.each([
    [{ HTTP_REQUEST_TIMEOUT_MS: '0' }, /HTTP_REQUEST_TIMEOUT_MS/],
    [{ HTTP_IDLE_TIMEOUT_MS: '0' }, /HTTP_IDLE_TIMEOUT_MS/],
    [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: '-1' }, /HTTP_KEEP_ALIVE_TIMEOUT_MS/],
    [{ HTTP_HEADERS_TIMEOUT_MS: 'soon' }, /HTTP_HEADERS_TIMEOUT_MS/],
    [
      { HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '2000' },
      /HTTP_HEADERS_TIMEOUT_MS \(2000\) must not exceed HTTP_REQUEST_TIMEOUT_MS \(1000\)/,
    ],
  ])('refuses %j, naming the variable: none can be switched off', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
