// What a stack started, closed in reverse order: the stacks of the harness and the bench's.

/**
 * What was started, closed in reverse order. Every closer runs; with `log`, a failure is logged, else the
 * first one is thrown once all ran.
 */
export class Cleanups {
  private readonly stack: Array<{ name: string; close: () => Promise<unknown> }> = [];

  constructor(private readonly log?: (line: string) => void) {}

  push(name: string, close: () => Promise<unknown>): void {
    this.stack.push({ name, close });
  }

  async closeAll(): Promise<void> {
    let failure: Error | undefined;
    for (const { name, close } of this.stack.reverse()) {
      await close().catch((err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        if (this.log) this.log(`could not stop ${name}: ${error.message}`);
        else failure ??= error;
      });
    }
    this.stack.length = 0;
    if (failure !== undefined) throw failure;
  }
}
