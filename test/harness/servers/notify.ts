// The NOTIFY_URL receiver of the tests and the fault suite: one endpoint of the Standard Webhooks receiver
// (./webhook-receiver.ts, every request verified with the standardwebhooks package), answering after a delay
// (so a kill can land mid-delivery) with the statuses a test queued (then 200), and keeping every delivery
// whose signature verified.
import { generateSecret } from '../../../src/delivery/wire.js';
import { startWebhookReceiver, type ReceivedWebhook } from './webhook-receiver.js';

export interface Delivery {
  /** The notification's id (`data.id`): `<workflowId>/<seq>[/<type>]`. */
  id: string;
  type: string;
  workflowId: string;
  receivedAt: number;
}

export interface NotifyReceiverOptions {
  /** How long before each answer, ms. */
  delayMs?: () => number;
}

export interface NotifyReceiver {
  /** NOTIFY_URL */
  url: string;
  /** NOTIFY_SECRET: a `whsec_` secret made for this receiver. */
  secret: string;
  /** Every request whose signature verified, in arrival order. */
  requests(): ReceivedWebhook[];
  /** Status codes to answer, in order; 200 once they run out. */
  answers: number[];
  /** The verified requests as notifications. */
  deliveries(): Delivery[];
  /** Requests whose signature did not verify. */
  badSignatures(): number;
  inFlight(): number;
  close(): Promise<void>;
}

export async function startNotifyReceiver(options: NotifyReceiverOptions = {}): Promise<NotifyReceiver> {
  const receiver = await startWebhookReceiver();
  const secret = generateSecret();
  const answers: number[] = [];
  const url = receiver.endpoint('environment', [secret], () => ({ status: answers.shift() ?? 200, delayMs: options.delayMs?.() ?? 0 }));
  const requests = () => receiver.received('environment');
  return {
    url,
    secret,
    requests,
    answers,
    deliveries: () =>
      requests().map(({ body, receivedAt }) => ({
        id: body.data.id,
        type: body.type,
        workflowId: body.data.id.split('/')[0]!,
        receivedAt,
      })),
    badSignatures: () => receiver.unverified(),
    inFlight: () => receiver.inFlight(),
    close: () => receiver.close(),
  };
}
