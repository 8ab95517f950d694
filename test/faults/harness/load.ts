import crypto from 'node:crypto';
import { signatureHeader } from '../../../src/signature.js';
import { albumKeyString, childKeyString } from '../../../workflows/keys.js';

/** One child message the load generator sends until an ingress answers 202 (as a webhook sender retries). */
export interface SentChild {
  childKey: string;
  albumKey: string | null;
  messageId: string;
  /** Null when the child's attachment was sent without a URL (`unavailable`, nothing to download). */
  attachmentPath: string | null;
  /** Phase of the first 202, null while unacknowledged. */
  ackedIn: string | null;
  acked: boolean;
  /** A 4xx answer, never retried (valid traffic must not get one). */
  refusedWith: number | null;
}

export interface Attempt {
  childKey: string;
  phase: string;
  at: number;
  /** HTTP status, or 0 when no answer came (connection refused or reset). */
  status: number;
  /** The row the 202 names (a 202 for the wrong child is a failure of its own). */
  answeredKey?: string;
}

interface Delivery {
  child: SentChild;
  body: string;
  dueAt: number;
  retries: number;
}

export interface AlbumShape {
  size: number;
  standalone: boolean;
  withTotal: boolean;
  /** Deliveries are spread over this long (ms). */
  spreadMs?: number;
  /** Share of the children delivered twice. */
  redeliveryRate?: number;
  /** Only every n-th child's attachment has a URL (default: every child's). */
  mediaEvery?: number;
}

export interface LoadOptions {
  workspace: string;
  secret: string;
  /** Ingress base URLs; requests go round-robin. */
  targets: string[];
  /** Builds the attachment URL of a media path. */
  mediaUrl: (path: string) => string;
  albumsPerSecond: number;
  maxInFlight: number;
}

const chance = (p: number) => Math.random() < p;

/**
 * Signed UnifyPort traffic: albums of 1–10 children (half of them with a total), standalone messages,
 * deliveries shuffled and spread over a second and a half, a fifth of them redelivered (same or new event
 * id). Every child is retried until it gets a 202; every attempt is recorded with the phase it was sent in.
 */
export class LoadGenerator {
  readonly children = new Map<string, SentChild>();
  readonly attempts: Attempt[] = [];
  phase = 'warm-up';
  private readonly queue: Delivery[] = [];
  private inFlight = 0;
  private next = 0;
  private albums = 0;
  private generating: NodeJS.Timeout | undefined;
  private pumping: NodeJS.Timeout | undefined;
  private readonly run = crypto.randomBytes(3).toString('hex');

  constructor(private readonly options: LoadOptions) {}

  start(): void {
    const tickMs = 100;
    let credit = 0;
    this.generating = setInterval(() => {
      credit += (this.options.albumsPerSecond * tickMs) / 1000;
      for (; credit >= 1; credit -= 1) {
        const standalone = chance(0.1);
        this.addAlbum({ size: standalone ? 1 : 1 + crypto.randomInt(10), standalone, withTotal: !standalone && chance(0.5) });
      }
    }, tickMs);
    this.pumping = setInterval(() => this.pump(), 20);
  }

  stopGenerating(): void {
    clearInterval(this.generating);
  }

  unacknowledged(): number {
    let count = 0;
    for (const child of this.children.values()) if (!child.acked && child.refusedWith === null) count += 1;
    return count;
  }

  pendingDeliveries(): number {
    return this.queue.length + this.inFlight;
  }

  /** Waits until every delivery was sent and answered (redeliveries included), then stops. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pendingDeliveries() > 0 || this.unacknowledged() > 0) {
      if (Date.now() > deadline) {
        const recent = this.attempts.filter((a) => a.at > Date.now() - 10_000);
        const counts = new Map<number, number>();
        for (const attempt of recent) counts.set(attempt.status, (counts.get(attempt.status) ?? 0) + 1);
        const statuses = [...counts].map(([status, n]) => `${status}×${n}`);
        throw new Error(`load did not drain: ${this.unacknowledged()} children unacknowledged; answers of the last 10 s: ${statuses.join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    clearInterval(this.pumping);
  }

  stop(): void {
    clearInterval(this.generating);
    clearInterval(this.pumping);
  }

  /** Queues the children of one album (or one standalone message) for delivery within `spreadMs`. */
  addAlbum(shape: AlbumShape): void {
    const { size, standalone, withTotal, spreadMs = 1_500, redeliveryRate = 0.2, mediaEvery = 1 } = shape;
    const number = this.albums++;
    const now = Date.now();
    const account = `acc-${number % 7}`;
    const conversation = `conv-${this.run}-${number}`;
    const scope = { workspace: this.options.workspace, provider: 'whatsapp', accountId: account, conversationId: conversation };
    const albumId = `alb-${number}`;
    const albumKey = standalone ? null : albumKeyString({ ...scope, albumId });
    const order = Array.from({ length: size }, (_, index) => index).sort(() => Math.random() - 0.5);
    for (const index of order) {
      const messageId = `m-${number}-${index}`;
      const attachmentPath = index % mediaEvery === 0 ? `/media/${this.run}/${number}/${index}.jpg` : null;
      const child: SentChild = {
        childKey: childKeyString({ ...scope, messageId }),
        albumKey,
        messageId,
        attachmentPath,
        ackedIn: null,
        acked: false,
        refusedWith: null,
      };
      this.children.set(child.childKey, child);
      const event = (id: string) =>
        JSON.stringify({
          id,
          type: 'message.received',
          provider: 'whatsapp',
          account_id: account,
          data: {
            conversation: { id: conversation },
            message: {
              id: messageId,
              ...(index === 0 ? { text: `album ${number}` } : {}),
              sent_at: new Date(now + index).toISOString(),
              attachments: [{ type: 'image', ...(attachmentPath ? { url: this.options.mediaUrl(attachmentPath) } : {}), mime_type: 'image/jpeg' }],
              ...(standalone ? {} : { album: { id: albumId, index, ...(withTotal ? { total: size } : {}) } }),
            },
          },
        });
      const eventId = `evt-${this.run}-${number}-${index}`;
      const dueAt = now + crypto.randomInt(spreadMs + 1);
      this.queue.push({ child, body: event(eventId), dueAt, retries: 0 });
      if (chance(redeliveryRate)) {
        const again = chance(0.5) ? eventId : `${eventId}-again`;
        this.queue.push({ child, body: event(again), dueAt: dueAt + crypto.randomInt(3_000), retries: 0 });
      }
    }
  }

  private pump(): void {
    const now = Date.now();
    this.queue.sort((a, b) => a.dueAt - b.dueAt);
    while (this.inFlight < this.options.maxInFlight && this.queue[0] && this.queue[0].dueAt <= now) {
      const delivery = this.queue.shift()!;
      this.inFlight += 1;
      void this.send(delivery).finally(() => {
        this.inFlight -= 1;
      });
    }
  }

  private async send(delivery: Delivery): Promise<void> {
    const { targets, workspace, secret } = this.options;
    const target = targets[this.next++ % targets.length]!;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const attempt: Attempt = { childKey: delivery.child.childKey, phase: this.phase, at: Date.now(), status: 0 };
    this.attempts.push(attempt);
    try {
      const response = await fetch(`${target}/webhooks/unifyport/${workspace}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-unifyport-timestamp': timestamp,
          'x-unifyport-signature': signatureHeader(secret, timestamp, delivery.body),
        },
        body: delivery.body,
        signal: AbortSignal.timeout(20_000),
      });
      attempt.status = response.status;
      const answer = (await response.json().catch(() => ({}))) as { childKey?: string };
      if (response.status === 202) {
        attempt.answeredKey = answer.childKey;
        if (!delivery.child.acked) {
          delivery.child.acked = true;
          delivery.child.ackedIn = attempt.phase;
        }
        return;
      }
      // Valid traffic is never refused: a 4xx is a finding, and retrying would not change it.
      if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
        delivery.child.refusedWith = response.status;
        return;
      }
    } catch {
      attempt.status = 0;
    }
    delivery.retries += 1;
    delivery.dueAt = Date.now() + Math.min(5_000, 250 * 2 ** Math.min(delivery.retries, 5));
    this.queue.push(delivery);
  }
}
