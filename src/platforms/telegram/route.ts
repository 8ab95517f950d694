import { unstorableTextProblem } from '../../domain/storable-text.js';
import { accountWebhookRoute } from '../webhook-route.js';
import { bots, secretTokenHeader, secretTokenProof } from './account.js';
import { parseUpdate } from './parse.js';

/**
 * `POST /webhooks/telegram/:workspace/:bot` (docs/telegram.md), the webhook a bot's setWebhook points at:
 * checks the secret token, parses the Update with its own parser (./parse.ts), stores it through the same
 * group commit as the other routes, and answers 200 with an empty body once it is committed — a JSON body
 * would be taken by Telegram as a Bot API method call. A message older than REPLAY_HORIZON_S (by its
 * `edit_date`, else `date`) is answered and not stored.
 */
export const telegramRoute = accountWebhookRoute({
  account: bots,
  summary: 'Receive a Telegram Update (the bot’s webhook)',
  description:
    'Body: one Telegram Update as `application/json`, at most MAX_BODY_BYTES, with the bot’s `secret_token` in ' +
    `\`${secretTokenHeader}\`. 200 with an empty body means the update is committed (a new child, a redelivery, ` +
    'an edit, a deletion of business messages, or an update recorded without a child), or that its message is older than ' +
    'REPLAY_HORIZON_S (by `edit_date`, else `date`) and is not stored. 503 with Retry-After: the database is unavailable, or ' +
    'too many updates are waiting to be stored; Telegram delivers the update again later.',
  proof: secretTokenProof,
  unstorable: { code: 'unstorable_update', message: `the update holds text PostgreSQL cannot store (${unstorableTextProblem})` },
  async receive({ request, reply, workspace, account: bot, body, store, quarantine, count, batcher, notBefore }) {
    const update = parseUpdate(workspace, bot.id, body, notBefore);
    if (update.kind === 'rejected') return quarantine(update.code, update.message);
    if (update.kind === 'too_old') {
      request.log.info({ workspace, type: update.type, reason: 'too_old' }, 'telegram update not stored');
      count('too_old');
      return reply.code(200).send();
    }

    const raw = body.toString('utf8');
    const source = 'telegram';
    if (update.kind === 'ignored') {
      await store(() => batcher.recordEvent({ workspace, source, eventId: update.eventId, type: update.type, raw }));
      count('ignored');
    } else if (update.kind === 'child') {
      const stored = await store(() =>
        batcher.storeChild({ source, eventId: update.eventId, type: update.type, raw, child: update.child }),
      );
      count(stored.erased ? 'erased' : stored.duplicate ? 'duplicate' : 'accepted');
    } else if (update.kind === 'deleted') {
      // The update says when nothing happened: the deletion is taken as made when it arrived.
      const withdrawal = {
        workspace,
        source,
        eventId: update.eventId,
        type: update.type,
        raw,
        keys: update.keys,
        change: 'deleted' as const,
      };
      await store(() => batcher.storeTogether([], [{ ...withdrawal, withdrawnAt: new Date().toISOString() }]));
      count('deleted');
    } else {
      // An edit without a usable edit_date is taken as made when it arrived.
      const editedAt = update.editedAt ?? new Date().toISOString();
      const stored = await store(() =>
        batcher.storeEdit({ source, eventId: update.eventId, type: update.type, raw, child: update.child, editedAt }),
      );
      count(stored.outcome === 'stale' ? 'duplicate' : stored.outcome === 'erased' ? 'erased' : 'edited');
    }
    return reply.code(200).send();
  },
});
