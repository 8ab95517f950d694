import type { Delivery } from '../../db/ingest.js';
import type { Withdrawal } from '../../db/withdrawals.js';
import { unstorableTextProblem } from '../../domain/storable-text.js';
import { accountWebhookRoute } from '../webhook-route.js';
import { channels } from './account.js';
import { parseLineWebhook } from './parse.js';
import { lineSignatureHeader, lineSignatureProof } from './signature.js';

/**
 * `POST /webhooks/line/:workspace/:channel` (docs/line.md), the webhook URL of a LINE channel: checks
 * the body's signature with the channel secret, parses its events with its own parser (./parse.ts),
 * stores all of them together — one batch of the group commit, or one transaction of its own when an
 * event unsends a message — and answers 200 once they are committed. An event older than REPLAY_HORIZON_S
 * (by its `timestamp`) is answered and not stored.
 */
export const lineRoute = accountWebhookRoute({
  account: channels,
  summary: 'Receive LINE webhook events (the channel’s webhook URL)',
  description:
    'Body: a LINE webhook body `{ "destination", "events": [...] }` as `application/json`, at most MAX_BODY_BYTES, ' +
    `with \`${lineSignatureHeader}\` = base64 of HMAC-SHA256 over the raw body with the channel secret. 200 means ` +
    'every event of the body is committed (an empty list, the console’s Verify, stores nothing), except events whose `timestamp` ' +
    'is older than REPLAY_HORIZON_S: those are answered and not stored. 503 with Retry-After: ' +
    'the database is unavailable, or too many events are waiting to be stored; LINE redelivers the events when redelivery is on.',
  proof: lineSignatureProof,
  unstorable: { code: 'unstorable_webhook', message: `the webhook body holds text PostgreSQL cannot store (${unstorableTextProblem})` },
  async receive({ request, reply, workspace, account: channel, body, store, quarantine, count, batcher, notBefore }) {
    const parsed = parseLineWebhook(workspace, channel.name, body, notBefore);
    if (parsed.kind === 'rejected') return quarantine(parsed.code, parsed.message);
    const recent = parsed.events.filter((event) => event.kind !== 'too_old');
    if (recent.length < parsed.events.length) {
      request.log.info({ workspace, events: parsed.events.length - recent.length, reason: 'too_old' }, 'line events not stored');
    }
    if (parsed.events.length > 0 && recent.length === 0) {
      count('too_old');
      return reply.code(200).send();
    }

    const source = 'line';
    const deliveries: Delivery[] = [];
    const withdrawals: Withdrawal[] = [];
    // An unsend without a usable time is taken as made when it arrived.
    const now = new Date().toISOString();
    for (const event of recent) {
      const { eventId, type, raw } = event;
      if (event.kind === 'child') deliveries.push({ source, eventId, type, raw, child: event.child });
      else if (event.kind === 'ignored') deliveries.push({ workspace, source, eventId, type, raw });
      else
        withdrawals.push({
          workspace,
          source,
          eventId,
          type,
          raw,
          keys: [event.key],
          change: 'unsent',
          withdrawnAt: event.unsentAt ?? now,
        });
    }
    const results = await store(() => batcher.storeTogether(deliveries, withdrawals));
    const children = results.filter((result) => result !== null);
    const outcome =
      parsed.events.length === 0
        ? 'verified'
        : withdrawals.length > 0
          ? 'unsent'
          : children.some((child) => !child.duplicate)
            ? 'accepted'
            : children.length > 0 && children.every((child) => child.erased)
              ? 'erased'
              : children.length > 0
                ? 'duplicate'
                : 'ignored';
    count(outcome);
    request.log.debug({ events: recent.length, children: children.length, withdrawals: withdrawals.length }, 'line events stored');
    return reply.code(200).send();
  },
});
