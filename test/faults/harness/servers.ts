import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '../../../src/common/signature.js';

export interface Fetch {
  path: string;
  startedAt: number;
  /** When the whole body was sent; null when the connection ended first (a killed worker). */
  completedAt: number | null;
}

/** Media files whose bodies trickle out over `durationMs`, so a kill can land mid-download; logs every fetch. */
export interface MediaServer {
  url(path: string): string;
  fetches: Fetch[];
  inFlight(): number;
  close(): Promise<void>;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function startMediaServer(options: { bytes: number; durationMs: () => number }): Promise<MediaServer> {
  const fetches: Fetch[] = [];
  let inFlight = 0;
  const server = http.createServer((req, res) => {
    const fetch: Fetch = { path: req.url ?? '', startedAt: Date.now(), completedAt: null };
    fetches.push(fetch);
    inFlight += 1;
    const body = crypto.createHash('sha256').update(fetch.path).digest();
    const chunks = 8;
    const chunkBytes = Math.ceil(options.bytes / chunks);
    const pause = options.durationMs() / chunks;
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': chunkBytes * chunks });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(Buffer.alloc(chunkBytes, body[sent % body.length]));
      sent += 1;
      if (sent === chunks) {
        clearInterval(timer);
        res.end(() => {
          fetch.completedAt = Date.now();
        });
      }
    }, pause);
    res.once('close', () => {
      clearInterval(timer);
      inFlight -= 1;
    });
  });
  const base = await listen(server);
  return { url: (path) => `${base}${path}`, fetches, inFlight: () => inFlight, close: () => close(server) };
}

export interface Delivery {
  id: string;
  type: string;
  workflowId: string;
  receivedAt: number;
}

/** The NOTIFY_URL receiver: checks each signature, answers after `delayMs` (so a kill can land mid-notify), logs every delivery. */
export interface NotifyReceiver {
  url: string;
  deliveries: Delivery[];
  /** Deliveries whose signature did not verify. */
  badSignatures(): number;
  inFlight(): number;
  close(): Promise<void>;
}

export async function startNotifyReceiver(options: { secret: string; delayMs: () => number }): Promise<NotifyReceiver> {
  let inFlight = 0;
  let badSignatures = 0;
  const deliveries: Delivery[] = [];
  const server = http.createServer((req, res) => {
    inFlight += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const timestamp = req.headers['x-albumflow-timestamp'];
      const signature = req.headers['x-albumflow-signature'];
      const verdict = verifySignature({
        secrets: [options.secret],
        timestamp: typeof timestamp === 'string' ? timestamp : undefined,
        signature: typeof signature === 'string' ? signature : undefined,
        body,
        toleranceS: 300,
      });
      setTimeout(() => {
        inFlight -= 1;
        if (!verdict.ok) {
          badSignatures += 1;
          res.writeHead(401).end();
          return;
        }
        const payload = JSON.parse(body.toString()) as { id: string; type: string };
        deliveries.push({ id: payload.id, type: payload.type, workflowId: payload.id.split('/')[0]!, receivedAt: Date.now() });
        res.writeHead(204).end();
      }, options.delayMs());
    });
  });
  const url = `${await listen(server)}/albumflow-events`;
  return { url, deliveries, badSignatures: () => badSignatures, inFlight: () => inFlight, close: () => close(server) };
}
