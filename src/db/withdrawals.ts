import type { MessageKey, WithdrawalChange } from '../domain/types.js';
import { storeDeliveries, type Delivery, type EventRecord, type StoredDeliveries } from './ingest.js';
import type { Pool } from './pool.js';
import { withTransaction } from './transaction.js';

/**
 * Messages were withdrawn (LINE's `unsend`, Telegram's `deleted_business_messages`): the event, and the
 * children it names (LINE's names one, Telegram's several).
 */
export interface Withdrawal extends EventRecord {
  keys: readonly MessageKey[];
  /** How they were withdrawn: the `change` of the `album.updated` that announces it. */
  change: WithdrawalChange;
  /** When they were withdrawn (ISO 8601). */
  withdrawnAt: string;
  /** The W3C traceparent of the request that brought it (tracing on and sampled). */
  traceparent?: string;
}

export interface StoredWithdrawals extends StoredDeliveries {
  /** Stored children newly marked withdrawn (a redelivered unsend, or one of a child never stored, marks none). */
  withdrawn: number;
}

/**
 * Stores the deliveries of one request and its withdrawals in one transaction: the deliveries as the
 * group commit would (so a message and its unsend in the same request both count), then each named
 * child not withdrawn yet is marked withdrawn — kept, with every attachment, and how it was withdrawn —
 * and queued in the outbox, so its workflow learns of it. A withdrawal of a child never stored is only
 * recorded as an event.
 */
export async function storeWithdrawals(
  pool: Pool,
  deliveries: readonly Delivery[],
  withdrawals: readonly Withdrawal[],
): Promise<StoredWithdrawals> {
  return withTransaction(pool, async (client) => {
    const records: EventRecord[] = withdrawals.map(({ workspace, source, eventId, type, raw, keys }) => ({
      workspace,
      source,
      eventId,
      type,
      raw,
      names: keys,
    }));
    const stored = await storeDeliveries(client, [...deliveries, ...records]);
    const { rows } = await client.query<{ id: string }>(
      `WITH withdrawn AS (
         UPDATE messages m SET withdrawn_at = w.withdrawn_at, withdrawal = w.withdrawal, withdrawn_traceparent = w.traceparent
           FROM jsonb_to_recordset($1::jsonb)
             AS w (workspace text, provider text, account_id text, conversation_id text, message_id text, withdrawn_at timestamptz,
                   withdrawal text, traceparent text)
          WHERE m.workspace = w.workspace AND m.provider = w.provider AND m.account_id = w.account_id
            AND m.conversation_id = w.conversation_id AND m.message_id = w.message_id AND m.withdrawn_at IS NULL
         RETURNING m.id, w.traceparent
       )
       INSERT INTO outbox (message_pk, traceparent) SELECT id, traceparent FROM withdrawn ORDER BY id RETURNING message_pk AS id`,
      [
        JSON.stringify(
          withdrawals.flatMap(({ keys, change, withdrawnAt, traceparent }) =>
            keys.map((key) => ({
              workspace: key.workspace,
              provider: key.provider,
              account_id: key.accountId,
              conversation_id: key.conversationId,
              message_id: key.messageId,
              withdrawn_at: withdrawnAt,
              withdrawal: change,
              traceparent: traceparent ?? null,
            })),
          ),
        ),
      ],
    );
    return { results: stored.results.slice(0, deliveries.length), queued: stored.queued + rows.length, withdrawn: rows.length };
  });
}
