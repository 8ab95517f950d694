// The NOTIFY_URL receiver of the tests and the fault suite: it keeps every request, checks each signature
// when it knows the secret, answers after a delay (so a kill can land mid-notify) with the statuses a
// test queued (then 200), and keeps every delivery whose signature verified.
import http from 'node:http';
import { verifySignature } from '../../../src/common/signature.js';
import { listen } from './listen.js';

export interface ReceivedRequest {
  method: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface Delivery {
  id: string;
  type: string;
  workflowId: string;
  receivedAt: number;
}

export interface NotifyReceiverOptions {
  /** NOTIFY_SECRET: a request whose signature does not verify is answered 401 and counted, not delivered. */
  secret?: string;
  /** How long before each answer, ms. */
  delayMs?: () => number;
  /** Runs before each answer (to read what albumflow had stored by then). */
  onRequest?: (request: ReceivedRequest) => Promise<void>;
  /** The path of the URL albumflow is given (any path is answered). */
  path?: string;
}

export interface NotifyReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Status codes to answer, in order; 200 once they run out. */
  answers: number[];
  deliveries: Delivery[];
  /** Requests whose signature did not verify. */
  badSignatures(): number;
  inFlight(): number;
  close(): Promise<void>;
}

export async function startNotifyReceiver(options: NotifyReceiverOptions = {}): Promise<NotifyReceiver> {
  const requests: ReceivedRequest[] = [];
  const answers: number[] = [];
  const deliveries: Delivery[] = [];
  let inFlight = 0;
  let badSignatures = 0;
  const answer = async (request: ReceivedRequest, res: http.ServerResponse) => {
    const delay = options.delayMs?.() ?? 0;
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    await options.onRequest?.(request);
    if (options.secret !== undefined) {
      const { 'x-albumflow-timestamp': timestamp, 'x-albumflow-signature': signature } = request.headers;
      const verdict = verifySignature({
        secrets: [options.secret],
        timestamp: typeof timestamp === 'string' ? timestamp : undefined,
        signature: typeof signature === 'string' ? signature : undefined,
        body: request.body,
        toleranceS: 300,
      });
      if (!verdict.ok) {
        badSignatures += 1;
        return void res.writeHead(401).end();
      }
      const payload = JSON.parse(request.body.toString()) as { id: string; type: string };
      deliveries.push({ id: payload.id, type: payload.type, workflowId: payload.id.split('/')[0]!, receivedAt: Date.now() });
    }
    res.writeHead(answers.shift() ?? 200).end('ok');
  };
  const server = http.createServer((req, res) => {
    inFlight += 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = { method: req.method ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(request);
      answer(request, res)
        .catch(() => res.writeHead(500).end())
        .finally(() => (inFlight -= 1));
    });
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}${options.path ?? '/albumflow-events'}`,
    requests,
    answers,
    deliveries,
    badSignatures: () => badSignatures,
    inFlight: () => inFlight,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
