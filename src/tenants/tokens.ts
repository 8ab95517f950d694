import crypto from 'node:crypto';

/** A token's SHA-256 digest: how tokens, console sessions and sign-in codes name a token in PostgreSQL. */
export function tokenDigest(token: string): Buffer {
  return crypto.createHash('sha256').update(token).digest();
}

/** A digest's short hash (its first 12 hex digits): how logs and errors refer to a token without holding it. */
export function digestHash(digest: Buffer): string {
  return digest.toString('hex').slice(0, 12);
}

/** A token's short hash (the first 12 hex digits of its digest). */
export function tokenHash(token: string): string {
  return digestHash(tokenDigest(token));
}

/** Where a tenant entry comes from: an environment variable (read-only), or the admin API. */
export type TenantSource = 'environment' | 'database';

export interface TokenEntry {
  /** The admin API's id; `env-<short hash>` for a token of the environment. */
  id: string;
  /** What the audit and the console call it. */
  name: string;
  hash: string;
  digest: Buffer;
  /** `*` reaches every workspace. */
  workspaces: '*' | ReadonlySet<string>;
  /** Epoch ms from which the token is refused; undefined: never. */
  expiresAt: number | undefined;
  source: TenantSource;
}

export function reaches(entry: Pick<TokenEntry, 'workspaces'>, workspace: string): boolean {
  return entry.workspaces === '*' || entry.workspaces.has(workspace);
}

export const scopeOf = (workspaces: readonly string[]): '*' | ReadonlySet<string> => (workspaces.includes('*') ? '*' : new Set(workspaces));

/** The entries of tokens given in the environment (API_TOKENS, or the generated admin token), named `<label> #<n>`. */
export function environmentTokens(tokens: ReadonlyMap<string, readonly string[]>, label: string): TokenEntry[] {
  return [...tokens].map(([token, workspaces], index) => {
    const digest = tokenDigest(token);
    const hash = digestHash(digest);
    return {
      id: `env-${hash}`,
      name: tokens.size === 1 && label !== 'API_TOKENS' ? label : `${label} #${index + 1}`,
      hash,
      digest,
      workspaces: scopeOf(workspaces),
      expiresAt: undefined,
      source: 'environment' as const,
    };
  });
}

/** The tokens the API accepts at one moment: an immutable table (the registry swaps in a new one on a change). */
export class TokenTable {
  readonly #entries: TokenEntry[] = [];
  readonly #byHash = new Map<string, TokenEntry>();
  readonly #byDigest = new Map<string, TokenEntry>();

  /** `entries` with a short hash seen before are left out and reported to `onDuplicate`. */
  constructor(entries: readonly TokenEntry[], onDuplicate: (entry: TokenEntry) => void = duplicateError) {
    for (const entry of entries) {
      if (this.#byHash.has(entry.hash)) {
        onDuplicate(entry);
        continue;
      }
      this.#entries.push(entry);
      this.#byHash.set(entry.hash, entry);
      this.#byDigest.set(entry.digest.toString('hex'), entry);
    }
  }

  static fromEnvironment(tokens: ReadonlyMap<string, readonly string[]>, label = 'API_TOKENS'): TokenTable {
    return new TokenTable(environmentTokens(tokens, label));
  }

  get size(): number {
    return this.#entries.length;
  }

  entries(): readonly TokenEntry[] {
    return this.#entries;
  }

  /**
   * The entry of a presented token, unless it expired. Compares SHA-256 digests, which all have the same
   * length, with every token and never stops early, so the time taken tells nothing about the tokens.
   */
  find(presented: string, now = Date.now()): TokenEntry | undefined {
    const digest = tokenDigest(presented);
    let found: TokenEntry | undefined;
    for (const entry of this.#entries) {
      if (crypto.timingSafeEqual(entry.digest, digest)) found = entry;
    }
    return found && live(found, now) ? found : undefined;
  }

  /** The entry whose short hash this is. */
  byHash(hash: string): TokenEntry | undefined {
    return this.#byHash.get(hash);
  }

  /** The unexpired entry whose SHA-256 digest this is (a stored session names its token by it). */
  byDigest(digest: Buffer, now = Date.now()): TokenEntry | undefined {
    const entry = this.#byDigest.get(digest.toString('hex'));
    return entry && live(entry, now) ? entry : undefined;
  }

  /** The digests of every unexpired token. */
  digests(now = Date.now()): Buffer[] {
    return this.#entries.filter((entry) => live(entry, now)).map((entry) => entry.digest);
  }
}

const live = (entry: TokenEntry, now: number) => entry.expiresAt === undefined || now < entry.expiresAt;

function duplicateError(entry: TokenEntry): never {
  throw new Error(`two API tokens share the short hash ${entry.hash}; replace one of them`);
}

/** What the routes look tokens up in: the registry's current table (src/tenants/registry.ts), or a fixed one. */
export interface Tokens {
  current(): TokenTable;
  /** `look()`, and when it finds nothing, again once the tokens were read afresh (a token just created elsewhere). */
  find<T>(look: () => T | undefined): Promise<T | undefined>;
  /** Told that a token was just accepted (its last use is recorded later, off the request's path). */
  used?(entry: TokenEntry): void;
}
