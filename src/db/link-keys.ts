// The keys of the `media_url` links (migrations/1766100000000_link-keys.sql). Keys come and go sealed (Buffer);
// making, sealing and opening them is src/media/link-keys.ts's.
import type { Pool, Queryable } from './pool.js';
import { withTransaction } from './transaction.js';

export interface StoredLinkKey {
  id: string;
  sealed: Buffer;
  /** Whether it signs new links (else it is retired, and only verifies). */
  current: boolean;
}

/** What a sealed link key is bound to (its AES-GCM additional data): its table, column and row. */
export function linkKeyPlace(id: string): string {
  return JSON.stringify(['link_keys', 'secret', id]);
}

/** Deletes the keys retired more than `keptS` ago, then answers the others. */
export async function selectLinkKeys(db: Queryable, keptS: number): Promise<StoredLinkKey[]> {
  const { rows } = await db.query<StoredLinkKey>(
    `WITH dropped AS (DELETE FROM link_keys WHERE retired_at < now() - make_interval(secs => $1))
     SELECT id, secret AS sealed, retired_at IS NULL AS current FROM link_keys
     WHERE retired_at IS NULL OR retired_at >= now() - make_interval(secs => $1)`,
    [keptS],
  );
  return rows;
}

/** Inserts `key` as the current key unless there is one already (another process made it first). */
export async function insertFirstLinkKey(db: Queryable, key: { id: string; sealed: Buffer }): Promise<void> {
  await db.query(`INSERT INTO link_keys (id, secret) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [key.id, key.sealed]);
}

export interface LinkKeyRotation {
  /** The keys that signed until now, and until when they verify. */
  retired: Array<{ id: string; keptUntil: Date }>;
  /** How many keys retired more than `keptS` ago were deleted. */
  dropped: number;
}

/** Retires the current key, makes `key` the current one, and deletes the keys retired more than `keptS` ago, in one transaction. */
export async function replaceLinkKey(pool: Pool, key: { id: string; sealed: Buffer }, keptS: number): Promise<LinkKeyRotation> {
  return withTransaction(pool, async (client) => {
    // Two rotations at once take turns: each retires the key the one before made.
    await client.query(`LOCK TABLE link_keys IN SHARE ROW EXCLUSIVE MODE`);
    const dropped = await client.query(`DELETE FROM link_keys WHERE retired_at < now() - make_interval(secs => $1)`, [keptS]);
    const { rows } = await client.query<{ id: string; kept_until: Date }>(
      `UPDATE link_keys SET retired_at = now() WHERE retired_at IS NULL
       RETURNING id, retired_at + make_interval(secs => $1) AS kept_until`,
      [keptS],
    );
    await client.query(`INSERT INTO link_keys (id, secret) VALUES ($1, $2)`, [key.id, key.sealed]);
    return { retired: rows.map((row) => ({ id: row.id, keptUntil: row.kept_until })), dropped: dropped.rowCount ?? 0 };
  });
}

/**
 * Re-seals every link key in one transaction (what `albumflow secrets rekey` does to the tenants' secrets):
 * `reseal` answers the new sealed value, or undefined to leave it. Answers how many changed.
 */
export async function resealLinkKeys(pool: Pool, reseal: (sealed: Buffer, place: string) => Buffer | undefined): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; secret: Buffer }>(`SELECT id, secret FROM link_keys FOR UPDATE`);
    let changed = 0;
    for (const row of rows) {
      const next = reseal(row.secret, linkKeyPlace(row.id));
      if (next === undefined) continue;
      await client.query(`UPDATE link_keys SET secret = $2 WHERE id = $1`, [row.id, next]);
      changed++;
    }
    return changed;
  });
}
