import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defaultSchedule,
  failingPeriodMs,
  judge,
  nextDelayMs,
  parseSchedule,
  retryAfterMs,
  ScheduleError,
  type AttemptContext,
} from '../../src/delivery/schedule.js';

const hour = 3_600_000;
const at = new Date('2026-12-03T12:00:00Z');
const context = (overrides: Partial<AttemptContext> = {}): AttemptContext => ({
  attempt: 1,
  schedule: defaultSchedule,
  failingSince: null,
  at,
  ...overrides,
});

describe('the delivery schedule', () => {
  it('is at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, 24 h and 24 h: about 75 hours', () => {
    expect(defaultSchedule).toEqual([0, 5_000, 300_000, 1_800_000, 2 * hour, 5 * hour, 10 * hour, 10 * hour, 24 * hour, 24 * hour]);
    const total = defaultSchedule.reduce((sum, delay) => sum + delay, 0);
    expect(total / hour).toBeCloseTo(75.6, 1);
  });

  it('reads DELIVERY_SCHEDULE: delays with units, the first 0s', () => {
    expect(parseSchedule('0s,5s,5m,30m,2h,5h,10h,10h,24h,24h')).toEqual(defaultSchedule);
    expect(parseSchedule('0ms, 250ms ,1.5s,1d')).toEqual([0, 250, 1_500, 24 * hour]);
  });

  it('refuses a schedule that does not start at once, or a delay without its unit, naming it', () => {
    expect(() => parseSchedule('5s,1m')).toThrow(
      new ScheduleError('DELIVERY_SCHEDULE must start with 0s: the first attempt is made at once'),
    );
    expect(() => parseSchedule('0s,5')).toThrow(/"5" \(delay #2\) is not a number and a unit/);
    expect(() => parseSchedule('0s,,5s')).toThrow(/delay #2/);
    expect(() => parseSchedule('0s,-5s')).toThrow(/"-5s"/);
    expect(() => parseSchedule('')).toThrow(ScheduleError);
  });

  it('reads Retry-After in seconds or as an HTTP date', () => {
    expect(retryAfterMs('120', at)).toBe(120_000);
    expect(retryAfterMs(' 0 ', at)).toBe(0);
    expect(retryAfterMs(new Date(at.getTime() + 90_000).toUTCString(), at)).toBe(90_000);
    expect(retryAfterMs(new Date(at.getTime() - 90_000).toUTCString(), at)).toBe(0);
    expect(retryAfterMs('soon', at)).toBeUndefined();
    expect(retryAfterMs(undefined, at)).toBeUndefined();
  });
});

describe('what an attempt does', () => {
  it('delivers on a 2xx and clears the endpoint', () => {
    for (const statusCode of [200, 201, 204, 299]) {
      expect(judge({ statusCode }, context({ failingSince: new Date(0) }))).toEqual({
        delivery: { state: 'delivered' },
        endpoint: 'succeeded',
      });
    }
  });

  it('disables the endpoint at once on a 410 and holds the delivery', () => {
    expect(judge({ statusCode: 410 }, context())).toEqual({ delivery: { state: 'held' }, endpoint: 'gone' });
  });

  it('treats a redirect, any other status and no answer as a failure, retried on the schedule', () => {
    for (const statusCode of [null, 301, 302, 400, 401, 404, 429, 500, 503]) {
      expect(judge({ statusCode }, context({ attempt: 3 }))).toEqual({
        delivery: { state: 'pending', retryInMs: 1_800_000 },
        endpoint: 'failed',
      });
    }
  });

  it('fails the delivery once the schedule is exhausted', () => {
    expect(judge({ statusCode: 500 }, context({ attempt: 10 }))).toEqual({ delivery: { state: 'failed' }, endpoint: 'failed' });
    expect(judge({ statusCode: 500 }, context({ attempt: 2, schedule: [0, 100] }))).toEqual({
      delivery: { state: 'failed' },
      endpoint: 'failed',
    });
  });

  it('disables an endpoint that has failed everything for five days', () => {
    const justUnder = new Date(at.getTime() - failingPeriodMs + 1);
    const fiveDays = new Date(at.getTime() - failingPeriodMs);
    expect(judge({ statusCode: 500 }, context({ failingSince: justUnder })).endpoint).toBe('failed');
    expect(judge({ statusCode: 500 }, context({ failingSince: fiveDays }))).toEqual({ delivery: { state: 'held' }, endpoint: 'failing' });
    expect(judge({ statusCode: null }, context({ failingSince: fiveDays, attempt: 10 }))).toEqual({
      delivery: { state: 'held' },
      endpoint: 'failing',
    });
  });

  it('honours Retry-After within the schedule: never sooner than scheduled, never later than its longest delay (fast-check)', () => {
    const schedules = fc.array(fc.integer({ min: 0, max: 100 * hour }), { minLength: 1, maxLength: 12 }).map((rest) => [0, ...rest]);
    fc.assert(
      fc.property(
        schedules,
        fc.nat(),
        fc.option(fc.integer({ min: 0, max: 1_000 * hour }), { nil: undefined }),
        (schedule, pick, asked) => {
          const attempt = 1 + (pick % (schedule.length - 1));
          const delay = nextDelayMs(schedule, attempt, asked);
          const longest = Math.max(...schedule);
          expect(delay).toBeGreaterThanOrEqual(schedule[attempt]!);
          expect(delay).toBeLessThanOrEqual(longest);
          if (asked !== undefined && asked <= longest) expect(delay).toBeGreaterThanOrEqual(asked);
          if (asked === undefined) expect(delay).toBe(schedule[attempt]);
        },
      ),
    );
  });

  it('makes at most as many attempts as the schedule has delays, whatever the receiver answers (fast-check)', () => {
    const answers = fc.array(
      fc.option(
        fc.integer({ min: 100, max: 599 }).filter((status) => status !== 410 && (status < 200 || status > 299)),
        { nil: null },
      ),
      {
        minLength: 1,
        maxLength: 30,
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), answers, (length, statuses) => {
        const schedule = [0, ...Array.from({ length: length - 1 }, () => 1_000)];
        let attempts = 0;
        for (const statusCode of statuses) {
          attempts += 1;
          const { delivery } = judge({ statusCode }, context({ attempt: attempts, schedule }));
          if (delivery.state !== 'pending') {
            expect(delivery.state).toBe('failed');
            expect(attempts).toBe(length);
            return;
          }
        }
        expect(attempts).toBeLessThan(length);
      }),
    );
  });
});
