import { CancellationScope, sleep } from '@temporalio/workflow';
import type { Deadline } from './album-rules.js';

const deadlineSummaries: Record<Deadline['kind'], string> = {
  quiet_period: 'quiet period',
  max_wait: 'maximum wait',
  late_item: 'late items debounce',
  late_window: 'late window',
};

/**
 * At most one durable timer, never later than the current deadline. A started timer is a billable action:
 * a deadline that moves later (each child extends the quiet period) keeps the running timer, which fires
 * early; the workflow then finds nothing due and arms the rest. A deadline that moves earlier replaces it.
 */
export class DeadlineTimer {
  private armed: { at: number; scope: CancellationScope; fired: boolean } | undefined;

  /** Keeps the running timer when it fires at or before the deadline, replaces it otherwise. */
  arm(deadline: Deadline | null): void {
    if (this.armed && deadline && this.armed.at <= deadline.at) return;
    this.disarm();
    if (!deadline) return;
    const armed = { at: deadline.at, scope: new CancellationScope(), fired: false };
    this.armed = armed;
    const summary = `${deadlineSummaries[deadline.kind]} ends ${new Date(deadline.at).toISOString()}`;
    void armed.scope
      .run(() => sleep(Math.max(1, deadline.at - Date.now()), { summary }))
      .then(
        () => {
          armed.fired = true;
        },
        () => undefined,
      );
  }

  get fired(): boolean {
    return this.armed?.fired ?? false;
  }

  /** The deadline of a timer that fired, clearing it; null when none fired. */
  takeFired(): number | null {
    if (!this.armed?.fired) return null;
    const { at } = this.armed;
    this.armed = undefined;
    return at;
  }

  private disarm(): void {
    if (this.armed && !this.armed.fired) this.armed.scope.cancel();
    this.armed = undefined;
  }
}
