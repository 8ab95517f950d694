// A receiver of albumflow's outbound webhooks for the delivery tests. Each endpoint is a path of its own with
// its own secrets; every request is verified with the standardwebhooks package's Webhook.verify, exactly as a
// receiver would (one that does not verify is answered 401 and counted, never kept). It answers what the test
// asks (a status, headers, a delay, or no answer at all) and counts the requests in flight, per endpoint and
// per webhook-id.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { listen } from './listen.js';

export interface ReceivedWebhook {
  endpoint: string;
  webhookId: string;
  /** webhook-timestamp, unix seconds. */
  timestamp: number;
  /** The webhook-signature header's entries. */
  signatures: string[];
  /** Which of the endpoint's secrets (their indexes) verify it. */
  verifiedBy: number[];
  body: { type: string; timestamp: string; data: { id: string } & Record<string, unknown> };
  headers: http.IncomingHttpHeaders;
  receivedAt: number;
  /** Its number among the endpoint's verified requests, from 1. */
  n: number;
  /** The status it was answered with; undefined while it waits for its answer, or when it never got one (hung). */
  status: number | undefined;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  /** Never answer (until the receiver closes). */
  hang?: boolean;
}

export type Answering = (request: ReceivedWebhook) => Answer;

export interface WebhookReceiver {
  /** The URL of endpoint `name`; its requests verify with `secrets` (any one of them). */
  endpoint(name: string, secrets: readonly string[], answering?: Answering): string;
  /** Replaces the endpoint's secrets or its answers. */
  setSecrets(name: string, secrets: readonly string[]): void;
  answer(name: string, answering: Answering): void;
  /** Every verified request, in arrival order (of one endpoint when named). */
  received(name?: string): ReceivedWebhook[];
  /** Requests that did not verify with any secret of their endpoint (or came to an unknown one). */
  unverified(): number;
  /** The most requests of one webhook-id in flight at once at one endpoint. */
  maxInFlightPerWebhookId(): number;
  /** The most requests in flight at once at the endpoint. */
  maxInFlight(name: string): number;
  inFlight(): number;
  close(): Promise<void>;
}

interface Endpoint {
  secrets: readonly string[];
  answering: Answering;
  inFlight: number;
  maxInFlight: number;
  verified: number;
}

/** Which of the secrets verify the request (Webhook.verify throws for a bad signature or a stale timestamp). */
function verifiers(secrets: readonly string[], body: string, headers: http.IncomingHttpHeaders): number[] {
  const flat = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]),
  );
  return secrets.flatMap((secret, index) => {
    try {
      new Webhook(secret).verify(body, flat);
      return [index];
    } catch {
      return [];
    }
  });
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const endpoints = new Map<string, Endpoint>();
  const received: ReceivedWebhook[] = [];
  const inFlightById = new Map<string, number>();
  let maxPerId = 0;
  let unverified = 0;
  let inFlight = 0;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    const name = decodeURIComponent((req.url ?? '/').slice(1));
    const endpoint = endpoints.get(name);
    const verifiedBy = endpoint ? verifiers(endpoint.secrets, body, req.headers) : [];
    if (!endpoint || verifiedBy.length === 0) {
      unverified += 1;
      return void res.writeHead(401).end('signature does not verify');
    }
    const webhookId = String(req.headers['webhook-id']);
    const request: ReceivedWebhook = {
      endpoint: name,
      webhookId,
      timestamp: Number(req.headers['webhook-timestamp']),
      signatures: String(req.headers['webhook-signature']).split(' '),
      verifiedBy,
      body: JSON.parse(body) as ReceivedWebhook['body'],
      headers: req.headers,
      receivedAt: Date.now(),
      n: ++endpoint.verified,
      status: undefined,
    };
    received.push(request);
    const key = `${name} ${webhookId}`;
    inFlightById.set(key, (inFlightById.get(key) ?? 0) + 1);
    maxPerId = Math.max(maxPerId, inFlightById.get(key)!);
    endpoint.inFlight += 1;
    endpoint.maxInFlight = Math.max(endpoint.maxInFlight, endpoint.inFlight);
    try {
      const answer = endpoint.answering(request);
      if (answer.hang) return await new Promise<void>((resolve) => res.once('close', resolve));
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
      request.status = answer.status;
    } finally {
      inFlightById.set(key, inFlightById.get(key)! - 1);
      endpoint.inFlight -= 1;
    }
  }

  const server = http.createServer((req, res) => {
    inFlight += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('utf8'))
        .catch(() => res.writeHead(500).end())
        .finally(() => (inFlight -= 1));
    });
  });
  const port = await listen(server);

  return {
    endpoint(name, secrets, answering = () => ({ status: 204 })) {
      endpoints.set(name, { secrets, answering, inFlight: 0, maxInFlight: 0, verified: 0 });
      return `http://127.0.0.1:${port}/${encodeURIComponent(name)}`;
    },
    setSecrets(name, secrets) {
      endpoints.get(name)!.secrets = secrets;
    },
    answer(name, answering) {
      endpoints.get(name)!.answering = answering;
    },
    received: (name) => (name === undefined ? [...received] : received.filter((request) => request.endpoint === name)),
    unverified: () => unverified,
    maxInFlightPerWebhookId: () => maxPerId,
    maxInFlight: (name) => endpoints.get(name)?.maxInFlight ?? 0,
    inFlight: () => inFlight,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
