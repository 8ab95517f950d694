// The sender of outbound delivery (docs/design.md, "Outbound delivery"): PostgreSQL is the queue, and no attempt costs a Temporal
// action. A pass leases endpoints that have a delivery to send (FOR NO KEY UPDATE SKIP LOCKED, a lease
// time, renewed while it works): one process at a time sends to an endpoint, so its rate limit and its
// concurrency hold across processes. For each leased endpoint a lane claims the sendable deliveries (each
// leased for one attempt), sends them outside any transaction and records each result. A process killed
// mid-send leaves its leases to expire; the attempt is then made again by any process (at least once).
import crypto from 'node:crypto';
import type { LookupFunction } from 'node:net';
import os from 'node:os';
import { errorMessage } from '../common/error-message.js';
import { networkPolicy, pinnedLookup, vetTarget } from '../common/network-guard.js';
import type { KeyRing } from '../common/secret-key.js';
import type { Logger } from '../common/log.js';
import { annotate, inSpanContinuing, withTraceHeaders } from '../common/tracing.js';
import {
  claimDeliveries,
  deliveriesChannel,
  leaseEndpoints,
  recordAttempt,
  releaseDelivery,
  releaseEndpoint,
  renewEndpointLease,
  type ClaimedDelivery,
  type LeasedEndpoint,
} from '../db/deliveries.js';
import { declareEnvironmentEndpoint, endpointSecretPlace, signingEndpointSecrets } from '../db/endpoints.js';
import { listen, type Listener } from '../db/listen.js';
import type { Pool } from '../db/pool.js';
import type { DeliveryConfig } from './config.js';
import type { Materialize } from './materialize.js';
import { deliveryAttemptsTotal, type AttemptKind } from './metrics.js';
import { postWebhook, type PostResult } from './post.js';
import { answerTimeoutMs, judge, retryAfterMs } from './schedule.js';
import { signedRequest, type SignedRequest } from './wire.js';

/**
 * Vets the URL of an endpoint added through the API at save and before each attempt: resolves with the
 * lookup that connects to the address it vetted, rejects for one it refuses (private, loopback, link-local,
 * unless NOTIFY_ALLOW_PRIVATE_NETWORKS).
 */
export type TargetGuard = (url: URL) => Promise<LookupFunction>;

/** The network guard of media downloads (src/common/network-guard.ts), with NOTIFY_ALLOW_PRIVATE_NETWORKS's permission. */
export function endpointGuard({ allowPrivateNetworks }: Pick<DeliveryConfig, 'allowPrivateNetworks'>): TargetGuard {
  const policy = networkPolicy(allowPrivateNetworks, 'NOTIFY_ALLOW_PRIVATE_NETWORKS');
  return async (url) => pinnedLookup(await vetTarget(url, policy));
}

export interface DeliveryEngineOptions {
  pool: Pool;
  /** Opens the endpoints' sealed secrets. */
  keys: KeyRing;
  config: DeliveryConfig;
  guard: TargetGuard;
  materialize: Materialize;
  logger: Logger;
  /** How long a receiver has to answer (default 15 s). */
  timeoutMs?: number;
  /**
   * How long an endpoint stays leased without a renewal (renewed every third of it while its lane works;
   * default 30 s). An attempt's delivery stays leased for `timeoutMs` + `leaseMs`.
   */
  leaseMs?: number;
  /** Period of the sweep that finds deliveries whose time came and leases that expired (default 1 s). */
  sweepIntervalMs?: number;
  /** Endpoints this process sends to at once (default 16). */
  maxEndpoints?: number;
}

export interface DeliveryEngine {
  /** Declares the environment endpoint (NOTIFY_URL), then listens for due deliveries and sweeps. */
  start(): Promise<void>;
  /** Asks for a pass now; coalesced with the one in flight. */
  wake(): void;
  /** Stops leasing, lets the attempts in flight finish and be recorded, releases its leases. */
  stop(): Promise<void>;
}

const maxBackoffMs = 30_000;
/**
 * How long a lane keeps its endpoint before it hands it back (after its attempts in flight) and goes to the
 * end of the line: a receiver with a long backlog does not hold one of a process's `maxEndpoints` for hours.
 */
const laneTurnMs = 10_000;

/** Rings once for any number of pokes between two waits, and never loses one. */
function doorbell() {
  let rung = false;
  let answer: (() => void) | undefined;
  return {
    ring() {
      rung = true;
      answer?.();
    },
    async wait() {
      if (!rung) await new Promise<void>((resolve) => (answer = resolve));
      rung = false;
      answer = undefined;
    },
  };
}

/** Spaces the starts of requests to at most `rate()` a second. */
function pacer(rate: () => number) {
  let nextAt = 0;
  return async () => {
    const now = Date.now();
    const at = Math.max(now, nextAt);
    nextAt = at + 1_000 / rate();
    if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
  };
}

function attemptKind(result: PostResult, refused: boolean): AttemptKind {
  if (refused) return 'refused';
  if (result.statusCode !== null) return result.statusCode >= 200 && result.statusCode < 300 ? 'delivered' : 'http_error';
  return result.timedOut ? 'timeout' : 'network_error';
}

export function createDeliveryEngine(options: DeliveryEngineOptions): DeliveryEngine {
  const { pool, keys, config, guard, materialize } = options;
  const log = options.logger.child({ component: 'delivery' });
  const timeoutMs = options.timeoutMs ?? answerTimeoutMs;
  const leaseMs = options.leaseMs ?? 30_000;
  const sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
  const maxEndpoints = options.maxEndpoints ?? 16;
  const holder = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
  const lanes = new Map<string, { poke: () => void; done: Promise<void> }>();

  let started = false;
  let stopped = false;
  let backoffMs = 0;
  let timer: NodeJS.Timeout | undefined;
  let listener: Listener | undefined;
  let pass: Promise<void> | undefined;
  let passAgain = false;

  function requestPass() {
    if (!started || stopped) return;
    if (pass) {
      passAgain = true;
      return;
    }
    clearTimeout(timer);
    pass = runPass().finally(() => {
      pass = undefined;
      if (passAgain) {
        passAgain = false;
        requestPass();
      } else if (!stopped) {
        timer = setTimeout(requestPass, backoffMs || sweepIntervalMs);
      }
    });
  }

  async function runPass(): Promise<void> {
    try {
      const free = maxEndpoints - lanes.size;
      if (free > 0) {
        const leased = await leaseEndpoints(pool, { holder, leaseMs, limit: free, busy: [...lanes.keys()] });
        for (const endpoint of leased) startLane(endpoint);
      }
      // A lane at work may have a new delivery to send.
      for (const lane of lanes.values()) lane.poke();
      backoffMs = 0;
    } catch (err) {
      backoffMs = Math.min(maxBackoffMs, backoffMs === 0 ? sweepIntervalMs : backoffMs * 2);
      log.warn({ err, retryInMs: backoffMs }, 'delivery pass failed');
    }
  }

  /** The secrets that sign for the endpoint now: NOTIFY_SECRET's for the environment endpoint, its stored ones otherwise. */
  async function signingSecrets(endpoint: LeasedEndpoint): Promise<string[]> {
    if (endpoint.source === 'environment') {
      if (!config.environment) throw new Error('the environment endpoint is stored, but NOTIFY_URL is not set in this process');
      return config.environment.secrets;
    }
    const stored = await signingEndpointSecrets(pool, endpoint.id);
    return stored.map((secret) => keys.open(secret.sealed, endpointSecretPlace(endpoint.id, secret.id)));
  }

  function startLane(leased: LeasedEndpoint) {
    let endpoint = leased;
    let lost = false;
    const bell = doorbell();
    const paced = pacer(() => endpoint.rateLimit);
    const inFlight = new Set<Promise<void>>();
    const lanelog = log.child({ endpointId: endpoint.id });

    async function renew() {
      try {
        const renewed = await renewEndpointLease(pool, endpoint.id, holder, leaseMs);
        if (renewed) endpoint = renewed;
        else lost = true;
      } catch (err) {
        lanelog.warn({ err }, 'could not renew the lease of an endpoint');
      }
      bell.ring();
    }
    const renewal = setInterval(() => void renew(), leaseMs / 3);

    /** Sends one attempt to the endpoint as it is now: an endpoint of the API only to an address the guard vetted. */
    async function reach(request: SignedRequest): Promise<{ result: PostResult; refused: boolean }> {
      const url = new URL(endpoint.url);
      let lookup: LookupFunction | undefined;
      if (endpoint.source === 'database') {
        try {
          lookup = await guard(url);
        } catch (err) {
          const result = {
            statusCode: null,
            retryAfter: undefined,
            response: null,
            error: errorMessage(err),
            timedOut: false,
            durationMs: 0,
          };
          return { result, refused: true };
        }
      }
      const traced = { ...request, headers: withTraceHeaders(request.headers) };
      return { result: await postWebhook(url, traced, { timeoutMs, ...(lookup ? { lookup } : {}) }), refused: false };
    }

    /** Records what the attempt did to the delivery and the endpoint, and stops the lane when the endpoint went off. */
    async function settle(delivery: ClaimedDelivery, at: Date, result: PostResult, kind: AttemptKind): Promise<void> {
      const attempt = delivery.attempts + 1;
      const verdict = judge(
        { statusCode: result.statusCode, retryAfterMs: retryAfterMs(result.retryAfter, new Date()) },
        { attempt, schedule: config.schedule, failingSince: endpoint.failingSince, at },
      );
      const after = await recordAttempt(pool, {
        deliveryId: delivery.id,
        endpointId: endpoint.id,
        attemptsBefore: delivery.attempts,
        at,
        statusCode: result.statusCode,
        durationMs: result.durationMs,
        error: result.error,
        response: result.response,
        delivery: verdict.delivery,
        endpoint: verdict.endpoint,
      });
      deliveryAttemptsTotal.inc({ outcome: kind });
      const facts = { notificationId: delivery.notificationId, attempt, statusCode: result.statusCode, error: result.error };
      if (verdict.delivery.state === 'failed') lanelog.warn(facts, 'a notification was not delivered: its attempts are exhausted');
      else lanelog.debug({ ...facts, outcome: kind }, 'delivery attempt');
      if (after) endpoint = { ...endpoint, failingSince: after.failingSince };
      if (after?.enabled) return;
      lost = true;
      if (verdict.endpoint === 'gone' || verdict.endpoint === 'failing') {
        lanelog.warn(
          { reason: verdict.endpoint, statusCode: result.statusCode },
          'endpoint disabled: its deliveries are held until it is enabled',
        );
      }
    }

    async function attempt(secrets: string[], delivery: ClaimedDelivery): Promise<void> {
      await paced();
      // Its turn came after the endpoint went off (a 410, disabled, the lease lost) or the sender stopped: no request.
      if (lost || stopped) {
        await releaseDelivery(pool, delivery).catch((err: unknown) => lanelog.warn({ err }, 'could not hand back a delivery'));
        return;
      }
      const at = new Date();
      const attributes = { 'albumflow.notification.type': delivery.type, 'albumflow.delivery.attempt': delivery.attempts + 1 };
      try {
        await inSpanContinuing(delivery.traceparent, 'albumflow.delivery', { attributes }, async (span) => {
          const data = await materialize(delivery.data, { workspace: delivery.workspace, type: delivery.type });
          const message = { notificationId: delivery.notificationId, type: delivery.type, recordedAt: delivery.recordedAt, data };
          const { result, refused } = await reach(signedRequest(message, secrets, at));
          const kind = attemptKind(result, refused);
          annotate(span, {
            'albumflow.delivery.outcome': kind,
            ...(result.statusCode === null ? {} : { 'http.response.status_code': result.statusCode }),
          });
          await settle(delivery, at, result, kind);
        });
      } catch (err) {
        // Nothing recorded: the delivery's lease runs out and the attempt is made again.
        lanelog.warn({ err, notificationId: delivery.notificationId }, 'a delivery attempt could not be made or recorded');
      }
    }

    async function run(): Promise<void> {
      const turnEndsAt = Date.now() + laneTurnMs;
      try {
        while (!stopped && !lost && Date.now() < turnEndsAt) {
          const free = config.concurrency - inFlight.size;
          const claimed =
            free > 0
              ? await claimDeliveries(pool, {
                  endpointId: endpoint.id,
                  limit: Math.min(free, endpoint.rateLimit),
                  leaseMs: timeoutMs + leaseMs,
                })
              : [];
          if (claimed.length > 0) {
            const secrets = await signingSecrets(endpoint);
            for (const delivery of claimed) {
              const sending = attempt(secrets, delivery).finally(() => {
                inFlight.delete(sending);
                bell.ring();
              });
              inFlight.add(sending);
            }
          }
          if (inFlight.size === 0) break;
          await bell.wait();
        }
      } catch (err) {
        lanelog.warn({ err }, 'sending to an endpoint stopped; a later pass takes it up again');
      } finally {
        await Promise.all(inFlight);
        clearInterval(renewal);
        // Also when it was disabled meanwhile: enabling it must not wait for the lease to run out. Another holder's lease stays.
        await releaseEndpoint(pool, endpoint.id, holder).catch((err: unknown) => lanelog.warn({ err }, 'could not release an endpoint'));
        lanes.delete(endpoint.id);
        requestPass();
      }
    }

    const lane = { poke: () => bell.ring(), done: Promise.resolve() };
    lanes.set(endpoint.id, lane);
    lane.done = run();
  }

  function wake() {
    if (backoffMs > 0) return;
    requestPass();
  }

  return {
    async start() {
      if (started || stopped) return;
      await declareEnvironmentEndpoint(pool, config.environment?.url);
      started = true;
      listener = listen({
        config: pool.options,
        channel: deliveriesChannel,
        onNotification: wake,
        onConnectionLost: (err) => log.warn({ err }, 'delivery listener lost its connection; reconnecting'),
      });
      requestPass();
    },
    wake,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await listener?.close();
      await pass;
      clearTimeout(timer);
      for (const lane of lanes.values()) lane.poke();
      await Promise.all([...lanes.values()].map((lane) => lane.done));
    },
  };
}
