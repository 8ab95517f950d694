// Where a platform's webhook bodies say when things happened, and moving those times to now: a body older
// than REPLAY_HORIZON_S is answered and not stored, so an example file is sent (`albumflow send --now`) as if
// it had just happened.

/** The times of a platform's webhook bodies: numbers in fields of its objects, in units of `unitMs` ms. */
export interface BodyTimes {
  unitMs: number;
  /** Each object of the body that holds a time, with the name of the field that holds it. */
  fields: (body: unknown) => Array<{ holder: Record<string, unknown>; field: string }>;
}

/**
 * Moves every time of `bodies` (in place) by one amount, so that the latest is `now` (ms since the epoch):
 * their order and distances stay, and a redelivery in them stays the same body. Times in the future and
 * bodies without times are left as they are.
 */
export function moveTimesToNow(bodies: readonly unknown[], times: BodyTimes, now = Date.now()): void {
  const fields = bodies.flatMap((body) => times.fields(body)).filter(({ holder, field }) => Number.isSafeInteger(holder[field]));
  if (fields.length === 0) return;
  const latest = Math.max(...fields.map(({ holder, field }) => holder[field] as number));
  const by = Math.floor(now / times.unitMs) - latest;
  if (by <= 0) return;
  for (const { holder, field } of fields) holder[field] = (holder[field] as number) + by;
}
