// The load generator, run as its own process by bench/run.ts: keep-alive HTTP with bounded
// concurrency, each body signed with the workspace secret when it is sent (or, to the Telegram route,
// sent with the bot's secret token). It receives one phase at a time over IPC and answers with every
// request's timings and outcome.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { signatureHeader } from '../src/common/signature.js';
import { Workload, type ChildRequest, type WorkloadOptions } from './workload.js';

export interface LoadPhase {
  /** Base URL of the server under test (the ingress or the ceiling). */
  url: string;
  workspace: string;
  secret: string;
  workload: WorkloadOptions;
  /** Post to this bot's Telegram webhook (the workload then makes Telegram Updates) instead of the UnifyPort route. */
  telegram?: { bot: string; secretToken: string };
  /** Requests per second, or null for a closed loop (as fast as the server answers). */
  rate: number | null;
  durationMs: number;
  /** Requests in flight at once (and keep-alive sockets). */
  concurrency: number;
  /** Safety stop: no new request after this long (albums may then stay incomplete). */
  hardStopMs: number;
}

/** One request. Times are epoch milliseconds with sub-millisecond precision. */
export interface RequestRecord {
  albumId: string;
  messageId: string;
  albumSize: number;
  albumHasTotal: boolean;
  redelivery: boolean;
  /** When the schedule wanted it sent; equal to sentAt in a closed loop. */
  intendedAt: number;
  sentAt: number;
  ackAt: number;
  /** HTTP status, or 0 when no response came (connection error, timeout). */
  status: number;
  /** Committed: a 202 from the UnifyPort route, a 200 from the Telegram route. */
  accepted: boolean;
  /** From a 202 body: the child was already stored; for a Telegram Update (an empty answer), whether it was a redelivery. */
  duplicate: boolean | null;
  albumKey: string | null;
  error?: string;
}

export interface PhaseResult {
  records: RequestRecord[];
  albumsCreated: number;
  /** The hard stop cut the phase short. */
  truncated: boolean;
}

export type LoadMessage = { type: 'run'; phase: LoadPhase };
export type LoadReply = { type: 'result'; result: PhaseResult } | { type: 'error'; message: string };

const requestTimeoutMs = 30_000;

function now(): number {
  return performance.timeOrigin + performance.now();
}

function post(agent: http.Agent, target: URL, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      target,
      { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, timeout: requestTimeoutMs },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no response within ${requestTimeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** A counting semaphore whose waiters are served in arrival order. */
class Slots {
  private free: number;
  private readonly waiters: Array<() => void> = [];
  constructor(count: number) {
    this.free = count;
  }
  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }
}

export async function runPhase(phase: LoadPhase): Promise<PhaseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: phase.concurrency });
  const { telegram } = phase;
  const route = telegram
    ? `/webhooks/telegram/${encodeURIComponent(phase.workspace)}/${encodeURIComponent(telegram.bot)}`
    : `/webhooks/unifyport/${encodeURIComponent(phase.workspace)}`;
  const target = new URL(route, phase.url);
  const workload = new Workload(phase.workload);
  const records: RequestRecord[] = [];
  const slots = new Slots(phase.concurrency);
  const inFlight = new Set<Promise<void>>();
  const start = now();
  let truncated = false;

  const send = async (request: ChildRequest, intendedAt: number) => {
    const sentAt = now();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers: Record<string, string> = telegram
      ? { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': telegram.secretToken }
      : {
          'content-type': 'application/json',
          'x-unifyport-timestamp': timestamp,
          'x-unifyport-signature': signatureHeader(phase.secret, timestamp, request.body),
        };
    const record: RequestRecord = {
      albumId: request.albumId,
      messageId: request.messageId,
      albumSize: request.albumSize,
      albumHasTotal: request.albumHasTotal,
      redelivery: request.redelivery,
      intendedAt,
      sentAt,
      ackAt: 0,
      status: 0,
      accepted: false,
      duplicate: null,
      albumKey: null,
    };
    try {
      const response = await post(agent, target, headers, request.body);
      record.ackAt = now();
      record.status = response.status;
      if (telegram && response.status === 200) {
        record.accepted = true;
        record.duplicate = request.redelivery;
        record.albumKey = request.albumKey;
      } else if (!telegram && response.status === 202) {
        const body = JSON.parse(response.text) as { duplicate?: boolean; albumKey?: string | null };
        record.accepted = true;
        record.duplicate = body.duplicate ?? null;
        record.albumKey = body.albumKey ?? null;
      }
    } catch (err) {
      record.ackAt = now();
      record.error = (err as Error).message;
    }
    records.push(record);
  };

  const launch = (request: ChildRequest, intendedAt: number) => {
    const task = send(request, intendedAt).finally(() => {
      slots.release();
      inFlight.delete(task);
    });
    inFlight.add(task);
  };

  if (phase.rate === null) {
    const lane = async () => {
      for (;;) {
        const elapsed = now() - start;
        if (elapsed > phase.hardStopMs) {
          truncated = true;
          return;
        }
        const unit = workload.next(elapsed >= phase.durationMs);
        if (!unit) return;
        for (const request of unit) {
          await slots.acquire();
          launch(request, now());
        }
      }
    };
    await Promise.all(Array.from({ length: phase.concurrency }, lane));
  } else {
    const intervalMs = 1000 / phase.rate;
    let scheduled = 0;
    for (;;) {
      const intendedAt = start + scheduled * intervalMs;
      if (now() - start > phase.hardStopMs) {
        truncated = true;
        break;
      }
      const unit = workload.next(intendedAt - start >= phase.durationMs);
      if (!unit) break;
      const wait = intendedAt - now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      for (const request of unit) {
        await slots.acquire();
        launch(request, intendedAt);
      }
      scheduled += unit.length;
    }
  }
  await Promise.all(inFlight);
  agent.destroy();
  return { records, albumsCreated: workload.albumsCreated, truncated };
}

if (process.send) {
  const reply = (message: LoadReply) => process.send!(message);
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: LoadMessage) => {
    if (message.type !== 'run') return;
    runPhase(message.phase).then(
      (result) => reply({ type: 'result', result }),
      (err: unknown) => reply({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  process.stdout.write('load generator ready\n');
}
