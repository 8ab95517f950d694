// Link keys held in memory, for tests of what signs and verifies links without PostgreSQL.
import type { LinkKey, LinkKeySource } from '../../src/media/link-keys.js';

/** The first key signs; every one verifies. */
export function fixedLinkKeys(...keys: [LinkKey, ...LinkKey[]]): LinkKeySource {
  return {
    current: async () => keys[0],
    find: async (id) => keys.find((key) => key.id === id)?.secret,
  };
}

/** A key of `n`: the same `n` always gives the same key. */
export const testLinkKey = (n: number): LinkKey => ({ id: n.toString(16).padStart(16, '0'), secret: Buffer.alloc(32, n) });
