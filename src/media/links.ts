// Links for the receiving service: a notification's attachment carries `media_url`, an absolute URL of
// albumflow's own media route with an expiring signature (`?expires=<unix s>&sig=<key id>.<HMAC>`), so that
// the receiver fetches the file without an API token. The signature covers the workspace, the hash, the
// expiry and the key id, under the link key that id names (src/media/link-keys.ts). Never a store URL.
import crypto from 'node:crypto';
import type { Config } from '../common/config.js';
import { resolveSecretKey, type KeyRing } from '../common/secret-key.js';
import type { Queryable } from '../db/pool.js';
import { linkClockSkewS, storedLinkKeys, type LinkKeySource } from './link-keys.js';

const e = encodeURIComponent;

/** The media route's path of a file of `workspace`. */
export function mediaRoutePath(workspace: string, sha256: string): string {
  return `/workspaces/${e(workspace)}/media/${e(sha256)}`;
}

export type LinkCheck = 'valid' | 'expired' | 'invalid';

export interface MediaLinks {
  /** The signed absolute URL of the file, valid for the configured lifetime from `nowMs`. */
  url(workspace: string, sha256: string, nowMs?: number): Promise<string>;
  /** Whether `expires` and `sig` (as the query gave them) sign this file now. */
  check(workspace: string, sha256: string, query: { expires?: unknown; sig?: unknown }, nowMs?: number): Promise<LinkCheck>;
}

/** The base of the links albumflow hands out: PUBLIC_URL, else the address it listens on. */
export function publicBaseUrl(config: Pick<Config, 'publicUrl' | 'host' | 'port'>): string {
  if (config.publicUrl) return config.publicUrl;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

function signature(key: Buffer, keyId: string, workspace: string, sha256: string, expires: number): string {
  return crypto
    .createHmac('sha256', key)
    .update(JSON.stringify(['media', keyId, workspace, sha256, expires]))
    .digest('base64url');
}

const signaturePattern = /^([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;

export function createMediaLinks(options: { baseUrl: string; lifetimeS: number; keys: LinkKeySource }): MediaLinks {
  return {
    async url(workspace, sha256, nowMs = Date.now()) {
      const expires = Math.floor(nowMs / 1000) + options.lifetimeS;
      const key = await options.keys.current();
      const sig = `${key.id}.${signature(key.secret, key.id, workspace, sha256, expires)}`;
      return `${options.baseUrl}${mediaRoutePath(workspace, sha256)}?expires=${expires}&sig=${sig}`;
    },
    async check(workspace, sha256, { expires, sig }, nowMs = Date.now()) {
      if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires) || typeof sig !== 'string') return 'invalid';
      const parts = signaturePattern.exec(sig);
      if (!parts) return 'invalid';
      // No link lives longer than one made now would (give or take the clocks' skew), whoever signed it.
      if (Number(expires) > Math.floor(nowMs / 1000) + options.lifetimeS + linkClockSkewS) return 'invalid';
      const keyId = parts[1]!;
      const key = await options.keys.find(keyId);
      if (!key) return 'invalid';
      const expected = Buffer.from(signature(key, keyId, workspace, sha256, Number(expires)));
      if (!crypto.timingSafeEqual(Buffer.from(parts[2]!), expected)) return 'invalid';
      return Number(expires) * 1000 <= nowMs ? 'expired' : 'valid';
    },
  };
}

/**
 * The links of this configuration, signed with the link keys kept in `db`, sealed under `keys` (the process's
 * ring; default: ALBUMFLOW_SECRET_KEY's, or DATA_DIR/secret-key's, read when first needed).
 */
export function mediaLinksFor(
  config: Pick<Config, 'publicUrl' | 'host' | 'port' | 'media' | 'secretKey' | 'dataDir'>,
  db: Queryable,
  keys?: () => KeyRing,
): MediaLinks {
  let ring: KeyRing | undefined;
  const defaultKeys = () => (ring ??= resolveSecretKey({ secretKey: config.secretKey, dataDir: config.dataDir }).ring);
  return createMediaLinks({
    baseUrl: publicBaseUrl(config),
    lifetimeS: config.media.urlLifetimeS,
    keys: storedLinkKeys(db, keys ?? defaultKeys, config.media.urlLifetimeS),
  });
}
