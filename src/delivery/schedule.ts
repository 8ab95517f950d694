// When a delivery is attempted and what an attempt's outcome does (docs/api.md, "The schedule"). Pure: the sender
// (engine.ts) applies the verdicts, the tests check them without a clock.
import type { DeliveryVerdict, EndpointOutcome } from '../db/deliveries.js';

const second = 1_000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;

/**
 * The delay before each attempt, the first counted from the recording: at once, then 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h, 10 h, 24 h and 24 h later — about 75 hours, as Standard Webhooks advises.
 */
export const defaultSchedule: readonly number[] = [
  0,
  5 * second,
  5 * minute,
  30 * minute,
  2 * hour,
  5 * hour,
  10 * hour,
  10 * hour,
  day,
  day,
];

/** How long a receiver has to answer: a 2xx later than that is a failure. */
export const answerTimeoutMs = 15 * second;

/** An endpoint that failed every attempt for this long is disabled. */
export const failingPeriodMs = 5 * day;

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

const units: Record<string, number> = { ms: 1, s: second, m: minute, h: hour, d: day };

/**
 * A schedule as DELIVERY_SCHEDULE writes it: delays separated by commas, each a number and a unit (`ms`, `s`,
 * `m`, `h`, `d`), the first `0s` (the first attempt is made at once), e.g. `0s,5s,5m,30m,2h`.
 */
export function parseSchedule(text: string, where = 'DELIVERY_SCHEDULE'): number[] {
  const delays = text.split(',').map((part, index) => {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(part);
    if (!match)
      throw new ScheduleError(`${where}: "${part.trim()}" (delay #${index + 1}) is not a number and a unit (ms, s, m, h, d) such as 5m`);
    return Math.round(Number(match[1]) * units[match[2]!]!);
  });
  if (delays[0] !== 0) throw new ScheduleError(`${where} must start with 0s: the first attempt is made at once`);
  return delays;
}

/**
 * The delay a `Retry-After` header asks for (seconds, or an HTTP date relative to `now`); undefined when it
 * is absent or unreadable.
 */
export function retryAfterMs(header: string | undefined, now: Date): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * second;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/** What a receiver did with one attempt. */
export interface AttemptOutcome {
  /** Null when no answer came in time (network error, timeout, a refused address). */
  statusCode: number | null;
  /** Its `Retry-After`, as a delay. */
  retryAfterMs?: number;
}

export interface AttemptContext {
  /** This attempt's number in the current schedule, from 1. */
  attempt: number;
  schedule: readonly number[];
  /** The endpoint's first failure since its last success (null: it has not failed since). */
  failingSince: Date | null;
  at: Date;
}

export interface Verdict {
  delivery: DeliveryVerdict;
  endpoint: EndpointOutcome;
}

/**
 * The delay before the attempt after `attempt`: the schedule's, or longer when the receiver asked for it, up
 * to the schedule's longest delay.
 */
export function nextDelayMs(schedule: readonly number[], attempt: number, askedMs?: number): number {
  const scheduled = schedule[attempt]!;
  return Math.min(Math.max(scheduled, askedMs ?? 0), Math.max(...schedule));
}

/**
 * What one attempt's outcome does: a 2xx delivers; a 410 disables the endpoint at once; any other outcome
 * schedules the next attempt, or fails the delivery when the schedule is exhausted — and disables the
 * endpoint when it has failed everything for five days. A disabled endpoint's delivery is held.
 */
export function judge(outcome: AttemptOutcome, context: AttemptContext): Verdict {
  const { statusCode } = outcome;
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { delivery: { state: 'delivered' }, endpoint: 'succeeded' };
  if (statusCode === 410) return { delivery: { state: 'held' }, endpoint: 'gone' };
  const { failingSince, at, attempt, schedule } = context;
  if (failingSince !== null && at.getTime() - failingSince.getTime() >= failingPeriodMs) {
    return { delivery: { state: 'held' }, endpoint: 'failing' };
  }
  if (attempt >= schedule.length) return { delivery: { state: 'failed' }, endpoint: 'failed' };
  return { delivery: { state: 'pending', retryInMs: nextDelayMs(schedule, attempt, outcome.retryAfterMs) }, endpoint: 'failed' };
}
