// `albumflow secrets rekey`: every stored secret sealed again under a new key (docs/operations.md, "Tenants").
import fs from 'node:fs';
import { replacePrivateFile } from '../common/private-file.js';
import { generateKey, KeyRing, keyText, parseKeys, secretKeyPath } from '../common/secret-key.js';
import { resealEndpointSecrets } from '../db/endpoints.js';
import { resealLinkKeys } from '../db/link-keys.js';
import type { Pool } from '../db/pool.js';
import { resealAll, sealedPlace } from '../db/tenants.js';

/** Seals every value not under the ring's first key again under it (the tenants', the endpoints' and the link keys); answers how many changed. */
export async function resealUnder(pool: Pool, ring: KeyRing): Promise<number> {
  const tenants = await resealAll(pool, ({ table, column, key, sealed }) => ring.reseal(sealed, sealedPlace(table, column, key)));
  const endpoints = await resealEndpointSecrets(pool, (sealed, place) => ring.reseal(sealed, place));
  const linkKeys = await resealLinkKeys(pool, (sealed, place) => ring.reseal(sealed, place));
  return tenants + endpoints + linkKeys;
}

export interface RekeyOutcome {
  resealed: number;
  /** The new key's id (the start of its SHA-256), never the key. */
  keyId: string;
  /** What the operator does next. */
  next: string;
}

/**
 * With ALBUMFLOW_SECRET_KEY (`<new>,<old>…`): re-seals under its first key. Without: a new key in
 * DATA_DIR/secret-key — written first beside the old one (so processes reading the file open both), then the
 * values re-sealed, then the old key dropped from the file.
 */
export async function rekey(pool: Pool, { secretKey, dataDir }: { secretKey: string | undefined; dataDir: string }): Promise<RekeyOutcome> {
  if (secretKey !== undefined) {
    const keys = parseKeys(secretKey, 'ALBUMFLOW_SECRET_KEY');
    const ring = new KeyRing(keys);
    const resealed = await resealUnder(pool, ring);
    return {
      resealed,
      keyId: ring.currentKeyId,
      next:
        keys.length > 1
          ? 'every value is sealed under the first key of ALBUMFLOW_SECRET_KEY: set it to that key alone on every process'
          : 'every value is sealed under ALBUMFLOW_SECRET_KEY',
    };
  }
  const file = secretKeyPath(dataDir);
  if (!fs.existsSync(file)) throw new Error(`there is no ${file}, and ALBUMFLOW_SECRET_KEY is unset: nothing to rekey`);
  const old = parseKeys(fs.readFileSync(file, 'utf8'), file);
  const fresh = generateKey();
  replacePrivateFile(file, [fresh, ...old].map(keyText).join('\n') + '\n');
  const ring = new KeyRing([fresh, ...old]);
  const resealed = await resealUnder(pool, ring);
  replacePrivateFile(file, `${keyText(fresh)}\n`);
  return { resealed, keyId: ring.currentKeyId, next: `${file} holds the new key alone; running processes read it when they meet it` };
}
