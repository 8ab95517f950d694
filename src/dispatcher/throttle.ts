/**
 * The dispatcher's per-workflow signal interval: children committed within `minIntervalMs` of the last
 * signal to their workflow wait and travel in one signal (the dispatcher exempts those that may complete
 * their album). Pure: every method takes the time it acts at.
 */
export class SignalThrottle {
  private readonly lastSignalAt = new Map<string, number>();
  /** When the earliest held-back children become due; Infinity when none are held. */
  private heldUntil = Infinity;

  constructor(readonly minIntervalMs: number) {}

  /** A signal to this workflow was accepted at `now`. */
  signalled(workflowId: string, now: number): void {
    this.lastSignalAt.set(workflowId, now);
  }

  /** When the next signal to this workflow may go out; at or before `now` means at once. */
  nextSignalAt(workflowId: string): number {
    return (this.lastSignalAt.get(workflowId) ?? -Infinity) + this.minIntervalMs;
  }

  /** Children were held back until `until`: the dispatcher's timer must wake for them. */
  held(until: number): void {
    this.heldUntil = Math.min(this.heldUntil, until);
  }

  /**
   * A pass starts at `now`: signals older than the interval are forgotten, and once the held-back
   * children are due this pass claims them, so their deadline is cleared. A pass that starts earlier
   * (a wake-up by another commit) keeps it.
   */
  passStarted(now: number): void {
    for (const [workflowId, at] of this.lastSignalAt) if (at <= now - this.minIntervalMs) this.lastSignalAt.delete(workflowId);
    if (this.heldUntil <= now) this.heldUntil = Infinity;
  }

  /** How long until held-back children are due (0 when overdue); Infinity when none are held. */
  msUntilHeldDue(now: number): number {
    return Math.max(0, this.heldUntil - now);
  }
}
