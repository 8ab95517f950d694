import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { buildApp, type App } from '../../src/process/app.js';
import { testClient, testConfig, testLogger, testPool } from '../harness/env.js';
import { unique } from '../harness/random.js';

// A client that never finishes its request must not hold its connection: the listener's request, header
// and idle timeouts close it (408 or a closed socket). Small timeouts here; the test's own timeout is only
// a generous bound, never the assertion.

const workspace = unique('timeouts');
const config = testConfig({
  WORKSPACE_SECRETS: JSON.stringify({ [workspace]: ['timeout-secret'] }),
  HTTP_REQUEST_TIMEOUT_MS: '800',
  HTTP_HEADERS_TIMEOUT_MS: '400',
  HTTP_IDLE_TIMEOUT_MS: '60000',
  HTTP_KEEP_ALIVE_TIMEOUT_MS: '500',
});

let pool: Pool;
let temporal: Client;
let app: App;
let port: number;

beforeAll(async () => {
  pool = testPool(config);
  temporal = await testClient(config);
  app = await buildApp({ config, pool, temporal, wakeDispatcher: () => undefined, logger: testLogger(config) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await app.close();
  await temporal.connection.close();
  await pool.end();
});

interface Ending {
  /** Everything the server sent before the socket closed. */
  received: string;
}

/** Opens a connection, lets `talk` write to it, and settles once the server has closed it. */
function untilClosed(talk: (socket: net.Socket) => void): Promise<Ending> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    // A write racing the server's close fails with EPIPE or ECONNRESET: the close is what is awaited.
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ received }));
    socket.on('connect', () => talk(socket));
  });
}

const body = JSON.stringify({ id: 'evt', type: 'message.received' });
const head = [
  `POST /webhooks/unifyport/${workspace} HTTP/1.1`,
  'Host: 127.0.0.1',
  'Content-Type: application/json',
  `Content-Length: ${Buffer.byteLength(body)}`,
  '',
  '',
].join('\r\n');

function expectTimedOut(ending: Ending) {
  // Either the 408 with albumflow's error body, or nothing at all once the socket is closed.
  if (ending.received === '') return;
  expect(ending.received).toMatch(/^HTTP\/1\.1 408 /);
  const answer = JSON.parse(ending.received.slice(ending.received.indexOf('\r\n\r\n') + 4)) as unknown;
  expect(answer).toEqual({ error: { code: 'request_timeout', message: expect.stringMatching(/HTTP_REQUEST_TIMEOUT_MS/) as unknown } });
}

describe('a request that never completes', () => {
  it('is answered 408 and closed when its body stops one byte short', { timeout: 30_000 }, async () => {
    const ending = await untilClosed((socket) => socket.write(head + body.slice(0, -1)));
    expectTimedOut(ending);
    expect(ending.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('is closed when its body trickles in a byte at a time, though every byte resets the idle timer', { timeout: 30_000 }, async () => {
    let timer: NodeJS.Timeout | undefined;
    const ending = await untilClosed((socket) => {
      socket.write(head);
      let sent = 0;
      // Never the last byte: the request would be complete.
      timer = setInterval(() => {
        if (sent < body.length - 1 && !socket.destroyed) socket.write(body[sent++]!);
      }, 50);
    });
    clearInterval(timer);
    expectTimedOut(ending);
  });

  it('is closed when its headers never end', { timeout: 30_000 }, async () => {
    const ending = await untilClosed((socket) => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `));
    expectTimedOut(ending);
  });

  it('is closed when it sends nothing at all', { timeout: 30_000 }, async () => {
    expectTimedOut(await untilClosed(() => undefined));
  });

  it('closes a kept-alive connection that asks nothing more after its answer', { timeout: 30_000 }, async () => {
    const ending = await untilClosed((socket) => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    expect(ending.received).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('the listener', () => {
  it('carries every configured timeout', () => {
    expect(app.server.requestTimeout).toBe(800);
    expect(app.server.headersTimeout).toBe(400);
    expect(app.server.timeout).toBe(60_000);
    expect(app.server.keepAliveTimeout).toBe(500);
  });
});

describe('a request that completes in time', () => {
  it('gets its answer as before', async () => {
    const ending = await untilClosed((socket) => socket.write(head + body));
    // Unsigned, so refused by the signature check: the body was read to the end and answered.
    expect(ending.received).toMatch(/^HTTP\/1\.1 401 /);
  });
});
