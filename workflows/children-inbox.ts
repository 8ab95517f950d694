import { log, setHandler } from '@temporalio/workflow';
import { childrenSignal } from './definitions.js';
import type { ChildArrival } from '../src/domain/types.js';

function isChildArrival(value: unknown): value is ChildArrival {
  const child = value as Partial<ChildArrival> | null;
  return (
    typeof child === 'object' &&
    child !== null &&
    typeof child.messageId === 'string' &&
    Array.isArray(child.attachments) &&
    Array.isArray(child.history)
  );
}

/** Collects the children of every `children` signal until the workflow takes them. */
export class ChildrenInbox {
  private buffered: ChildArrival[] = [];
  /** Signals received by this run. */
  signals = 0;

  constructor() {
    setHandler(childrenSignal, (batch) => {
      this.signals += 1;
      const children: unknown[] = Array.isArray(batch?.children) ? batch.children : [];
      const valid = children.filter(isChildArrival);
      if (valid.length < children.length) log.warn('ignored malformed children in a signal', { malformed: children.length - valid.length });
      this.buffered.push(...valid);
    });
  }

  get pending(): boolean {
    return this.buffered.length > 0;
  }

  take(): ChildArrival[] {
    const taken = this.buffered;
    this.buffered = [];
    return taken;
  }
}
