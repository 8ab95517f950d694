// The ceiling of the delivery phase, run as its own process by bench/phases/delivery.ts: a bare loop that
// signs each of the phase's request bodies with the standardwebhooks package (Webhook.sign, as
// src/delivery/wire.ts signs) and POSTs it to the receiver, DELIVERY_CEILING_CONCURRENCY at a time over
// kept-alive connections. Nothing else: no queue, no lease, no record of the answer, no media links minted,
// no tracing. It reads the bodies (DELIVERY_CEILING_BODIES, a JSON file of `{ webhookId, body }`) before it
// says it is ready, sends them all when told over IPC, and answers with the statuses it got.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';

export interface CeilingRequest {
  webhookId: string;
  body: string;
}

export type CeilingMessage = { type: 'run' };
export type CeilingReply = { type: 'done'; statuses: Record<string, number> } | { type: 'error'; message: string };

export const deliveryCeilingReadyLine = 'delivery ceiling ready';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function post(agent: http.Agent, url: URL, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(body);
  });
}

async function sendAll(
  requests: readonly CeilingRequest[],
  url: URL,
  webhook: Webhook,
  concurrency: number,
): Promise<Record<string, number>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses: Record<string, number> = {};
  let next = 0;
  const sender = async () => {
    while (next < requests.length) {
      const { webhookId, body } = requests[next++]!;
      const at = new Date();
      const headers = {
        'content-type': 'application/json',
        'webhook-id': webhookId,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': webhook.sign(webhookId, at, body),
      };
      const status = await post(agent, url, headers, body);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, sender));
  } finally {
    agent.destroy();
  }
  return statuses;
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (isMain && process.send) {
  const requests = JSON.parse(fs.readFileSync(required('DELIVERY_CEILING_BODIES'), 'utf8')) as CeilingRequest[];
  const url = new URL(required('DELIVERY_CEILING_URL'));
  const webhook = new Webhook(required('DELIVERY_CEILING_SECRET'));
  const concurrency = Number(required('DELIVERY_CEILING_CONCURRENCY'));
  const reply = (message: CeilingReply) => process.send!(message);
  process.on('disconnect', () => process.exit(0));
  // An exit of its own, so that --cpu-prof writes the profile.
  process.once('SIGTERM', () => process.exit(0));
  process.on('message', (message: CeilingMessage) => {
    if (message.type !== 'run') return;
    sendAll(requests, url, webhook, concurrency).then(
      (statuses) => reply({ type: 'done', statuses }),
      (err: unknown) => reply({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  process.stdout.write(`${deliveryCeilingReadyLine}\n`);
}
