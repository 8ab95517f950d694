import type { AppProcess } from './processes.js';

/** Samples the resident memory of albumflow's processes every second; keeps the peak per process name. */
export class MemoryWatch {
  readonly peaks = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly processes: AppProcess[]) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), 1_000);
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  /** The highest peak of the processes of one role (`ingress` or `worker`). */
  peakOf(role: AppProcess['role']): number {
    return Math.max(0, ...this.processes.filter((p) => p.role === role).map((p) => this.peaks.get(p.name) ?? 0));
  }

  private sample(): void {
    for (const process of this.processes) {
      const memory = process.memory();
      if (memory) this.peaks.set(process.name, Math.max(this.peaks.get(process.name) ?? 0, memory.peakRssBytes, memory.rssBytes));
    }
  }
}
