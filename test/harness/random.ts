// Names and numbers: ids no other test of the run uses, and a seeded generator for what must come out the
// same on every run (the bench's traffic and media files).
import crypto from 'node:crypto';

/** A name no other test of this run uses (task queues, workspaces, ids). */
export function unique(prefix: string): string {
  return `${prefix}-${crypto.randomBytes(5).toString('hex')}`;
}

/** mulberry32: a small, fast, seedable generator; plenty for shuffling traffic. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
