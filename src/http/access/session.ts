import crypto from 'node:crypto';
import { isUnavailable, type Queryable } from '../../db/pool.js';
import { deleteSession, exchangeSignInCode, findSession, findSignInCode, insertSession, insertSignInCode } from '../../db/sessions.js';
import { HttpError } from '../../common/http-error.js';
import { tokenDigest, type TokenEntry, type TokenTable } from '../../tenants/tokens.js';

export const sessionCookie = 'albumflow_session';
/**
 * The console's pages (/ui) show media and call actions under /workspaces/…, so the cookie must be sent
 * to both: `/` is the narrowest path that covers them.
 */
export const sessionCookiePath = '/';
export const sessionLifetimeS = 12 * 60 * 60;
/** How long the code of a sign-in link may be exchanged, by default. */
export const signInCodeLifetimeMs = 60 * 60 * 1000;

/** A session id: 32 random bytes, base64url. Anything else in the cookie is refused without a lookup. */
const sessionIdPattern = /^[A-Za-z0-9_-]{43}$/;
/** A sign-in code: 18 random bytes, base64url. */
const signInCodePattern = /^[A-Za-z0-9_-]{24}$/;

export interface Session {
  /** The cookie's value: the session id. */
  cookie: string;
  entry: TokenEntry;
  expiresAt: Date;
}

export interface ConsoleSessionOptions {
  sessionLifetimeS?: number;
  codeLifetimeMs?: number;
}

/** Secrets are kept by their digest, so what PostgreSQL holds signs nobody in. */
function digest(secret: string): Buffer {
  return crypto.createHash('sha256').update(secret).digest();
}

/** PostgreSQL unreachable: a 503 the client may retry, never a 500. */
async function available<T>(statement: Promise<T>): Promise<T> {
  try {
    return await statement;
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    throw new HttpError(503, 'database_unavailable', 'the database is unavailable, so sessions cannot be checked; retry later', {
      'retry-after': '5',
    });
  }
}

/**
 * The console's sessions and sign-in codes, kept in PostgreSQL so that every ingress process sharing it
 * sees the same ones: a session is a random id (the cookie) whose row names the token it was opened with;
 * it counts while that row exists, has not expired, and its token is still configured. Signing out deletes
 * the row; removing or replacing a token ends its sessions at the next request. Every database failure
 * that means "unreachable" is a 503.
 */
export class ConsoleSessions {
  readonly #db: Queryable;
  readonly #sessionLifetimeS: number;
  readonly #codeLifetimeMs: number;

  constructor(
    db: Queryable,
    { sessionLifetimeS: lifetimeS = sessionLifetimeS, codeLifetimeMs = signInCodeLifetimeMs }: ConsoleSessionOptions = {},
  ) {
    this.#db = db;
    this.#sessionLifetimeS = lifetimeS;
    this.#codeLifetimeMs = codeLifetimeMs;
  }

  get lifetimeS(): number {
    return this.#sessionLifetimeS;
  }

  /** Opens a session of a token that was just presented. */
  async start(entry: TokenEntry): Promise<Session> {
    const cookie = crypto.randomBytes(32).toString('base64url');
    const { expiresAt } = await available(
      insertSession(this.#db, { idDigest: digest(cookie), tokenDigest: entry.digest, lifetimeS: this.#sessionLifetimeS }),
    );
    return { cookie, entry, expiresAt };
  }

  /** The token entry of the session this cookie holds, while the session lasts and its token is configured. */
  async verify(tokens: TokenTable, cookie: string): Promise<TokenEntry | undefined> {
    if (!sessionIdPattern.test(cookie)) return undefined;
    const session = await available(findSession(this.#db, digest(cookie)));
    return session ? tokens.byDigest(session.tokenDigest) : undefined;
  }

  /** Ends the session this cookie holds, for every copy of the cookie. */
  async end(cookie: string): Promise<void> {
    if (!sessionIdPattern.test(cookie)) return;
    await available(deleteSession(this.#db, digest(cookie)));
  }

  /** A new single-use code for a sign-in link that opens a session of `token`. */
  async issueCode(token: string): Promise<string> {
    const code = crypto.randomBytes(18).toString('base64url');
    await available(
      insertSignInCode(this.#db, { codeDigest: digest(code), tokenDigest: tokenDigest(token), lifetimeMs: this.#codeLifetimeMs }),
    );
    return code;
  }

  /** Whether the code may still be exchanged (looking does not use it up). */
  async codeIsPending(tokens: TokenTable, code: string): Promise<boolean> {
    if (!signInCodePattern.test(code)) return false;
    const token = await available(findSignInCode(this.#db, digest(code)));
    return token !== undefined && tokens.byDigest(token) !== undefined;
  }

  /** Exchanges a code, once, for a session; undefined for an unknown, used or expired code or a removed token. */
  async exchangeCode(tokens: TokenTable, code: string): Promise<Session | undefined> {
    if (!signInCodePattern.test(code)) return undefined;
    const cookie = crypto.randomBytes(32).toString('base64url');
    const session = await available(
      exchangeSignInCode(this.#db, {
        codeDigest: digest(code),
        idDigest: digest(cookie),
        lifetimeS: this.#sessionLifetimeS,
        tokenDigests: tokens.digests(),
      }),
    );
    const entry = session && tokens.byDigest(session.tokenDigest);
    return entry ? { cookie, entry, expiresAt: session.expiresAt } : undefined;
  }
}
