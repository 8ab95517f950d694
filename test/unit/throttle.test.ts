import { describe, expect, it } from 'vitest';
import { SignalThrottle } from '../../src/dispatcher/throttle.js';

describe('the dispatcher signal throttle', () => {
  it('lets the first signal to a workflow go at once and the next one after the interval', () => {
    const throttle = new SignalThrottle(500);
    expect(throttle.nextSignalAt('w')).toBe(-Infinity);
    throttle.signalled('w', 1_000);
    expect(throttle.nextSignalAt('w')).toBe(1_500);
    expect(throttle.nextSignalAt('other')).toBe(-Infinity);
  });

  it('forgets signals older than the interval when a pass starts', () => {
    const throttle = new SignalThrottle(500);
    throttle.signalled('old', 1_000);
    throttle.signalled('new', 1_400);
    throttle.passStarted(1_500);
    expect(throttle.nextSignalAt('old')).toBe(-Infinity);
    expect(throttle.nextSignalAt('new')).toBe(1_900);
  });

  it('keeps the earliest held-back deadline until a pass starts after it', () => {
    const throttle = new SignalThrottle(500);
    expect(throttle.msUntilHeldDue(0)).toBe(Infinity);
    throttle.held(2_000);
    throttle.held(1_800);
    throttle.held(2_500);
    expect(throttle.msUntilHeldDue(1_000)).toBe(800);
    // A pass woken by another commit before the deadline must not forget it.
    throttle.passStarted(1_200);
    expect(throttle.msUntilHeldDue(1_200)).toBe(600);
    expect(throttle.msUntilHeldDue(1_900)).toBe(0);
    throttle.passStarted(1_800);
    expect(throttle.msUntilHeldDue(1_800)).toBe(Infinity);
  });
});
