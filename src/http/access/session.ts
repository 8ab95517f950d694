import crypto from 'node:crypto';
import { sign, unsign } from '@fastify/cookie';
import { tokenHash, type TokenEntry, type TokenTable } from './tokens.js';

export const sessionCookie = 'albumflow_session';
/**
 * The console's pages (/ui) show media and call actions under /workspaces/…, so the cookie must be sent
 * to both: `/` is the narrowest path that covers them.
 */
export const sessionCookiePath = '/';
export const sessionLifetimeS = 12 * 60 * 60;
const maxCookieLength = 256;

/**
 * A console session is `<token hash>.<expiry, unix seconds>` signed with HMAC-SHA256 keyed by the
 * token itself. Any replica that has the token verifies it without shared state; a token removed
 * from API_TOKENS (or replaced) no longer verifies the sessions it signed.
 */
export function issueSession(entry: TokenEntry, nowMs = Date.now()): { cookie: string; expiresAt: Date } {
  const expiresAt = Math.floor(nowMs / 1000) + sessionLifetimeS;
  return { cookie: sign(`${entry.hash}.${expiresAt}`, entry.token), expiresAt: new Date(expiresAt * 1000) };
}

/** The token entry a session cookie was signed with, if it is still configured and the session has not expired. */
export function verifySession(tokens: TokenTable, cookie: string, nowMs = Date.now()): TokenEntry | undefined {
  if (cookie.length > maxCookieLength) return undefined;
  const [hash, expiresAt] = cookie.split('.');
  const entry = hash === undefined ? undefined : tokens.byHash(hash);
  if (!entry || !/^\d{1,12}$/.test(expiresAt ?? '')) return undefined;
  const verdict = unsign(cookie, entry.token);
  if (!verdict.valid || verdict.value !== `${hash}.${expiresAt}`) return undefined;
  return Number(expiresAt) * 1000 > nowMs ? entry : undefined;
}

/** How long the code of a sign-in link may be exchanged, by default. */
export const signInCodeLifetimeMs = 60 * 60 * 1000;

export interface SignInCodeOptions {
  /** How long an issued code may be exchanged. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * Single-use sign-in codes, as the start banner prints them: a code is exchanged once for a session
 * of the token it was issued for. They live in the memory of the process that printed them.
 */
export class SignInCodes {
  readonly #pending = new Map<string, { tokenHash: string; expiresAt: number }>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor({ ttlMs = signInCodeLifetimeMs, now = Date.now }: SignInCodeOptions = {}) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  issue(token: string): string {
    const code = crypto.randomBytes(18).toString('base64url');
    this.#pending.set(digest(code), { tokenHash: tokenHash(token), expiresAt: this.#now() + this.#ttlMs });
    return code;
  }

  /** The entry of the code's token, once; undefined for an unknown, used or expired code or a removed token. */
  redeem(tokens: TokenTable, code: string): TokenEntry | undefined {
    const key = digest(code);
    const pending = this.#pending.get(key);
    this.#pending.delete(key);
    for (const [other, { expiresAt }] of this.#pending) if (expiresAt <= this.#now()) this.#pending.delete(other);
    if (!pending || pending.expiresAt <= this.#now()) return undefined;
    return tokens.byHash(pending.tokenHash);
  }
}

/** Codes are kept by their digest, so a lookup's timing depends on nothing an attacker can steer. */
function digest(code: string): string {
  return crypto.createHash('sha256').update(code).digest('base64url');
}
