// The keys of the media links in PostgreSQL: sealed under ALBUMFLOW_SECRET_KEY, rotated with
// `albumflow secrets rotate-link-key`, deleted once the links they signed have expired, resealed by a rekey.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/common/config.js';
import { KeyRing, parseKeys } from '../../src/common/secret-key.js';
import { linkKeyPlace } from '../../src/db/link-keys.js';
import type { Pool } from '../../src/db/pool.js';
import { retiredLinkKeyKeptS, rotateLinkKey } from '../../src/media/link-keys.js';
import { createMediaLinks, mediaLinksFor, type MediaLinks } from '../../src/media/links.js';
import { freshDatabase, testConfig, testPool } from '../harness/env.js';
import { fixedLinkKeys } from '../harness/link-keys.js';
import { runCli } from '../harness/cli.js';

const workspace = 'demo';
const sha256 = 'ab'.repeat(32);
const secretKey = crypto.randomBytes(32).toString('hex');

let config: Config;
let databaseUrl: string;
let pool: Pool;

beforeAll(async () => {
  databaseUrl = await freshDatabase();
  config = testConfig({ DATABASE_URL: databaseUrl, ALBUMFLOW_SECRET_KEY: secretKey, PUBLIC_URL: 'https://albums.example' });
  pool = testPool(config);
});

afterAll(async () => {
  await pool?.end();
});

/** A link's query, as the media route gets it. */
async function linkOf(links: MediaLinks): Promise<{ expires: string; sig: string }> {
  const url = new URL(await links.url(workspace, sha256));
  return { expires: url.searchParams.get('expires')!, sig: url.searchParams.get('sig')! };
}

const keyIdOf = (link: { sig: string }) => link.sig.split('.')[0];

async function storedKeys(): Promise<Array<{ id: string; secret: Buffer; retired: boolean }>> {
  const { rows } = await pool.query<{ id: string; secret: Buffer; retired: boolean }>(
    `SELECT id, secret, retired_at IS NOT NULL AS retired FROM link_keys ORDER BY created_at`,
  );
  return rows;
}

/** What someone holding `secret` as key `id` would sign. */
const signedWith = (id: string, secret: Buffer) =>
  createMediaLinks({ baseUrl: 'https://albums.example', lifetimeS: config.media.urlLifetimeS, keys: fixedLinkKeys({ id, secret }) });

describe('media link keys', () => {
  it('are kept sealed: a link signed with what the table holds is refused, and only the secret key opens it', async () => {
    const links = mediaLinksFor(config, pool);
    const link = await linkOf(links);
    expect(await links.check(workspace, sha256, link)).toBe('valid');
    const [stored, ...others] = await storedKeys();
    expect(others).toEqual([]);
    expect(keyIdOf(link)).toBe(stored!.id);

    // A dump's bytes sign nothing, whichever way they are read.
    for (const secret of [stored!.secret, Buffer.from(stored!.secret.toString('utf8'), 'base64url')]) {
      expect(await links.check(workspace, sha256, await linkOf(signedWith(stored!.id, secret)))).toBe('invalid');
    }
    // With ALBUMFLOW_SECRET_KEY, the same row opens to the key that signs.
    const ring = new KeyRing(parseKeys(secretKey, 'ALBUMFLOW_SECRET_KEY'));
    const key = Buffer.from(ring.open(stored!.secret, linkKeyPlace(stored!.id)), 'base64url');
    expect(key.length).toBe(32);
    expect(stored!.secret.includes(key)).toBe(false);
    expect(await links.check(workspace, sha256, await linkOf(signedWith(stored!.id, key)))).toBe('valid');
    // The plain key of before is gone with its table.
    const { rows } = await pool.query<{ table: string | null }>(`SELECT to_regclass('signing_keys')::text AS table`);
    expect(rows[0]!.table).toBeNull();
  });

  it('rotate: links signed with the key before still work, new links name the new key, and every process verifies both', async () => {
    const running = mediaLinksFor(config, pool);
    const old = await linkOf(running);
    const run = await runCli(['secrets', 'rotate-link-key'], { DATABASE_URL: databaseUrl, ALBUMFLOW_SECRET_KEY: secretKey });
    expect([run.code, run.stderr]).toEqual([0, '']);
    const [before, after] = await storedKeys();
    expect([before!.retired, after!.retired]).toEqual([true, false]);
    expect(before!.id).toBe(keyIdOf(old));
    expect(run.stdout).toMatch(
      new RegExp(
        `^link key ${after!.id} signs new links \\(every process within a minute\\); key ${before!.id} verifies the links it signed until \\d{4}-`,
      ),
    );

    // A process started now signs with the new key and verifies the old links.
    const started = mediaLinksFor(config, pool);
    const fresh = await linkOf(started);
    expect(keyIdOf(fresh)).toBe(after!.id);
    expect(await started.check(workspace, sha256, old)).toBe('valid');
    // The process that read the keys before verifies a link of the new key at once.
    expect(await running.check(workspace, sha256, fresh)).toBe('valid');
    expect(await running.check(workspace, sha256, old)).toBe('valid');
  });

  it('delete a retired key once the links it signed have expired', async () => {
    const [retired] = (await storedKeys()).filter((key) => key.retired);
    const old = await linkOf(signedWith(retired!.id, await openedKey(retired!)));
    const keptS = retiredLinkKeyKeptS(config.media.urlLifetimeS);
    await pool.query(`UPDATE link_keys SET retired_at = now() - make_interval(secs => $2) WHERE id = $1`, [retired!.id, keptS - 60]);
    expect(await mediaLinksFor(config, pool).check(workspace, sha256, old)).toBe('valid');
    await pool.query(`UPDATE link_keys SET retired_at = now() - make_interval(secs => $2) WHERE id = $1`, [retired!.id, keptS + 1]);
    expect(await mediaLinksFor(config, pool).check(workspace, sha256, old)).toBe('invalid');
    expect((await storedKeys()).map((key) => key.id)).not.toContain(retired!.id);
  });

  it('are sealed again by `albumflow secrets rekey`, retired ones too: a process with the new key alone verifies and signs', async () => {
    const old = await linkOf(mediaLinksFor(config, pool));
    await rotateLinkKey(pool, new KeyRing(parseKeys(secretKey, 'ALBUMFLOW_SECRET_KEY')), config.media.urlLifetimeS);
    const fresh = crypto.randomBytes(32).toString('hex');
    const run = await runCli(['secrets', 'rekey'], { DATABASE_URL: databaseUrl, ALBUMFLOW_SECRET_KEY: `${fresh},${secretKey}` });
    expect([run.code, run.stderr]).toEqual([0, '']);
    const stored = await storedKeys();
    expect(stored.map((key) => key.retired)).toEqual([true, false]);
    expect(run.stdout).toMatch(new RegExp(`^${stored.length} stored secrets sealed again under key [0-9a-f]{16}; `));
    const freshOnly = new KeyRing(parseKeys(fresh, 'the new key'));
    for (const key of stored) expect(freshOnly.open(key.secret, linkKeyPlace(key.id))).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const rekeyed = mediaLinksFor({ ...config, secretKey: fresh }, pool);
    expect(await rekeyed.check(workspace, sha256, old)).toBe('valid');
    expect(await rekeyed.check(workspace, sha256, await linkOf(rekeyed))).toBe('valid');
    // The key before opens them no more.
    expect(() => new KeyRing(parseKeys(secretKey, 'the old key')).open(stored[0]!.secret, linkKeyPlace(stored[0]!.id))).toThrow(
      /not in ALBUMFLOW_SECRET_KEY/,
    );
  });
});

async function openedKey(key: { id: string; secret: Buffer }): Promise<Buffer> {
  return Buffer.from(new KeyRing(parseKeys(secretKey, 'ALBUMFLOW_SECRET_KEY')).open(key.secret, linkKeyPlace(key.id)), 'base64url');
}
