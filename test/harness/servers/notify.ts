// The NOTIFY_URL receiver of the tests and the fault suite: one endpoint of the Standard Webhooks receiver
// (./webhook-receiver.ts, every request verified with the standardwebhooks package), answering 200 after a
// delay (so a kill can land mid-delivery), or what an outage the test starts answers, and keeping every
// request whose signature verified.
import { generateSecret } from '../../../src/delivery/wire.js';
import { startWebhookReceiver, type Answering, type ReceivedWebhook } from './webhook-receiver.js';

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
  /** Every request whose signature verified, in arrival order, with the status it was answered with. */
  requests(): ReceivedWebhook[];
  /** Answers every request this way until `recover()` (an outage: 503s, hangs). */
  outage(answering: Answering): void;
  /** Answers 200 again. */
  recover(): void;
  /** The verified requests answered 2xx, as notifications: what the receiver accepted. */
  deliveries(): Delivery[];
  /** Requests whose signature did not verify. */
  badSignatures(): number;
  inFlight(): number;
  close(): Promise<void>;
}

export async function startNotifyReceiver(options: NotifyReceiverOptions = {}): Promise<NotifyReceiver> {
  const receiver = await startWebhookReceiver();
  const secret = generateSecret();
  let outage: Answering | undefined;
  const url = receiver.endpoint(
    'environment',
    [secret],
    (request) => outage?.(request) ?? { status: 200, delayMs: options.delayMs?.() ?? 0 },
  );
  const requests = () => receiver.received('environment');
  return {
    url,
    secret,
    requests,
    outage: (answering) => (outage = answering),
    recover: () => (outage = undefined),
    deliveries: () =>
      requests()
        .filter(({ status }) => status !== undefined && status >= 200 && status < 300)
        .map(({ body, receivedAt }) => ({
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
