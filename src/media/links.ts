// Links for the receiving service: a notification's attachment carries `media_url`, an absolute URL of
// albumflow's own media route with an expiring signature (`?expires=<unix s>&sig=<HMAC>`), so that the
// receiver fetches the file without an API token. The signature covers the workspace, the hash and the
// expiry, under a key every process reads from PostgreSQL (src/db/signing-keys.ts). Never a store URL.
import crypto from 'node:crypto';
import type { Config } from '../common/config.js';
import type { Queryable } from '../db/pool.js';
import { signingKey } from '../db/signing-keys.js';

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

function signature(key: Buffer, workspace: string, sha256: string, expires: number): string {
  return crypto
    .createHmac('sha256', key)
    .update(JSON.stringify(['media', workspace, sha256, expires]))
    .digest('base64url');
}

export function createMediaLinks(options: { baseUrl: string; lifetimeS: number; key: () => Promise<Buffer> }): MediaLinks {
  let key: Promise<Buffer> | undefined;
  const currentKey = () => {
    key ??= options.key().catch((err: unknown) => {
      key = undefined;
      throw err;
    });
    return key;
  };
  return {
    async url(workspace, sha256, nowMs = Date.now()) {
      const expires = Math.floor(nowMs / 1000) + options.lifetimeS;
      const sig = signature(await currentKey(), workspace, sha256, expires);
      return `${options.baseUrl}${mediaRoutePath(workspace, sha256)}?expires=${expires}&sig=${sig}`;
    },
    async check(workspace, sha256, { expires, sig }, nowMs = Date.now()) {
      if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires) || typeof sig !== 'string') return 'invalid';
      const expected = Buffer.from(signature(await currentKey(), workspace, sha256, Number(expires)));
      const given = Buffer.from(sig);
      if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return 'invalid';
      return Number(expires) * 1000 <= nowMs ? 'expired' : 'valid';
    },
  };
}

/** The links of this configuration, signed with the key kept in `db`. */
export function mediaLinksFor(config: Pick<Config, 'publicUrl' | 'host' | 'port' | 'media'>, db: Queryable): MediaLinks {
  return createMediaLinks({
    baseUrl: publicBaseUrl(config),
    lifetimeS: config.media.urlLifetimeS,
    key: () => signingKey(db, 'media_url'),
  });
}
