// The keys of the `media_url` links: random, each named by an id that the links it signs carry, kept in
// PostgreSQL sealed under ALBUMFLOW_SECRET_KEY (a dump alone mints no link), so that every process signs and
// verifies with the same ones. `albumflow secrets rotate-link-key` makes a new one; the one before verifies
// the links it signed until they have expired, then it is deleted (docs/operations.md, "The media store").
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KeyRing } from '../common/secret-key.js';
import {
  insertFirstLinkKey,
  linkKeyPlace,
  replaceLinkKey,
  selectLinkKeys,
  type LinkKeyRotation,
  type StoredLinkKey,
} from '../db/link-keys.js';
import type { Pool, Queryable } from '../db/pool.js';

export interface LinkKey {
  /** 16 hex digits, in every link it signs. */
  id: string;
  secret: Buffer;
}

export interface LinkKeySource {
  /** The key new links are signed with. */
  current(): Promise<LinkKey>;
  /** The key named `id` while it verifies links; undefined for an unknown, malformed or deleted one. */
  find(id: string): Promise<Buffer | undefined>;
}

export const linkKeyIdPattern = /^[0-9a-f]{16}$/;

/** How far a signer's clock may run ahead of a verifier's: a link may expire this much beyond a lifetime from now. */
export const linkClockSkewS = 300;

/** How long a process signs with the keys it read before it reads them again: a rotation reaches every process within it. */
export const linkKeyRefreshMs = 60_000;

/** The least time between two reads that unknown key ids start (a key made on another process a moment ago). */
const missReadSpacingMs = 250;

/**
 * How long a retired key still verifies: a link lives MEDIA_URL_LIFETIME_S from when it was signed, by a
 * process that may sign with the retired key for a refresh more, on a clock that may run the skew ahead.
 */
export function retiredLinkKeyKeptS(lifetimeS: number): number {
  return lifetimeS + linkClockSkewS + linkKeyRefreshMs / 1000;
}

/** A new random key, sealed under the ring's first key and bound to its row. */
function newLinkKey(ring: KeyRing): { id: string; sealed: Buffer } {
  const id = crypto.randomBytes(8).toString('hex');
  return { id, sealed: ring.seal(crypto.randomBytes(32).toString('base64url'), linkKeyPlace(id)) };
}

function opened(ring: KeyRing, key: StoredLinkKey): LinkKey {
  return { id: key.id, secret: Buffer.from(ring.open(key.sealed, linkKeyPlace(key.id)), 'base64url') };
}

/**
 * The link keys of `db`, read again every `linkKeyRefreshMs` and when a link names a key not read yet (at most
 * four reads a second however many such links come). The first process that finds no current key makes one.
 */
export function storedLinkKeys(db: Queryable, keys: () => KeyRing, lifetimeS: number): LinkKeySource {
  const keptS = retiredLinkKeyKeptS(lifetimeS);
  let known: { readAt: number; current: LinkKey; byId: Map<string, Buffer> } | undefined;
  let reading: Promise<NonNullable<typeof known>> | undefined;
  let missRead: Promise<NonNullable<typeof known>> | undefined;
  let lastReadAt = 0;

  const read = () =>
    (reading ??= (async () => {
      lastReadAt = Date.now();
      let rows = await selectLinkKeys(db, keptS);
      if (!rows.some((row) => row.current)) {
        await insertFirstLinkKey(db, newLinkKey(keys()));
        rows = await selectLinkKeys(db, keptS);
      }
      const current = rows.find((row) => row.current);
      if (!current) throw new Error('no current link key could be read');
      const ring = keys();
      const all = rows.map((row) => opened(ring, row));
      known = { readAt: lastReadAt, current: opened(ring, current), byId: new Map(all.map((key) => [key.id, key.secret])) };
      return known;
    })().finally(() => {
      reading = undefined;
    }));
  const fresh = async () => (known && Date.now() - known.readAt < linkKeyRefreshMs ? known : read());
  const readForMiss = () =>
    (missRead ??= (async () => {
      const wait = lastReadAt + missReadSpacingMs - Date.now();
      if (wait > 0) await sleep(wait);
      return read();
    })().finally(() => {
      missRead = undefined;
    }));

  return {
    async current() {
      return (await fresh()).current;
    },
    async find(id) {
      if (!linkKeyIdPattern.test(id)) return undefined;
      return (await fresh()).byId.get(id) ?? (await readForMiss()).byId.get(id);
    },
  };
}

export interface LinkKeyRotationOutcome extends LinkKeyRotation {
  /** The new key's id. */
  id: string;
}

/** Makes a new key the one that signs; the one before verifies for `retiredLinkKeyKeptS` more. */
export async function rotateLinkKey(pool: Pool, ring: KeyRing, lifetimeS: number): Promise<LinkKeyRotationOutcome> {
  const key = newLinkKey(ring);
  return { id: key.id, ...(await replaceLinkKey(pool, key, retiredLinkKeyKeptS(lifetimeS))) };
}
