import crypto from 'node:crypto';

/** A token's SHA-256 digest: how console sessions and sign-in codes name their token in PostgreSQL. */
export function tokenDigest(token: string): Buffer {
  return crypto.createHash('sha256').update(token).digest();
}

/** A token's short hash (the first 12 hex digits of its digest): how logs and errors refer to a token without holding it. */
export function tokenHash(token: string): string {
  return tokenDigest(token).toString('hex').slice(0, 12);
}

export interface TokenEntry {
  token: string;
  hash: string;
  /** `*` reaches every workspace. */
  workspaces: '*' | ReadonlySet<string>;
}

export function reaches(entry: Pick<TokenEntry, 'workspaces'>, workspace: string): boolean {
  return entry.workspaces === '*' || entry.workspaces.has(workspace);
}

/** The tokens the API accepts (API_TOKENS, or the generated admin token). */
export class TokenTable {
  readonly #entries: Array<TokenEntry & { digest: Buffer }> = [];
  readonly #byHash = new Map<string, TokenEntry>();
  readonly #byDigest = new Map<string, TokenEntry>();

  constructor(tokens: ReadonlyMap<string, readonly string[]>) {
    for (const [token, workspaces] of tokens) {
      const entry = {
        token,
        hash: tokenHash(token),
        workspaces: workspaces.includes('*') ? ('*' as const) : new Set(workspaces),
        digest: tokenDigest(token),
      };
      if (this.#byHash.has(entry.hash)) {
        throw new Error(`two API tokens share the short hash ${entry.hash}; replace one of them`);
      }
      this.#entries.push(entry);
      this.#byHash.set(entry.hash, entry);
      this.#byDigest.set(entry.digest.toString('hex'), entry);
    }
  }

  get size(): number {
    return this.#entries.length;
  }

  /**
   * The entry of a presented token. Compares SHA-256 digests, which all have the same length, with
   * every configured token and never stops early, so the time taken tells nothing about the tokens.
   */
  find(presented: string): TokenEntry | undefined {
    const digest = tokenDigest(presented);
    let found: TokenEntry | undefined;
    for (const entry of this.#entries) {
      if (crypto.timingSafeEqual(entry.digest, digest)) found = entry;
    }
    return found;
  }

  /** The entry whose short hash this is. */
  byHash(hash: string): TokenEntry | undefined {
    return this.#byHash.get(hash);
  }

  /** The entry whose SHA-256 digest this is (a stored session names its token by it). */
  byDigest(digest: Buffer): TokenEntry | undefined {
    return this.#byDigest.get(digest.toString('hex'));
  }

  /** The digests of every configured token. */
  digests(): Buffer[] {
    return this.#entries.map((entry) => entry.digest);
  }
}
