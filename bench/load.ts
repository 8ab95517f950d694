// The load generator, run as its own process by bench/run.ts: the harness's open and closed loops
// (test/harness/load.ts) over one phase's seeded workload at a time. It receives each phase over IPC and
// answers with every request's timings and outcome.
import { runPhase, type PhaseOptions, type PhaseResult } from '../test/harness/load.js';
import { Workload, type WorkloadOptions } from './workload.js';

/** One phase: where the load goes and how fast, and the workload it sends. */
export interface LoadPhase extends PhaseOptions {
  workload: WorkloadOptions;
}

export type LoadMessage = { type: 'run'; phase: LoadPhase };
export type LoadReply = { type: 'result'; result: PhaseResult } | { type: 'error'; message: string };

if (process.send) {
  const reply = (message: LoadReply) => process.send!(message);
  process.on('disconnect', () => process.exit(0));
  process.on('message', (message: LoadMessage) => {
    if (message.type !== 'run') return;
    runPhase(message.phase, new Workload(message.phase.workload)).then(
      (result) => reply({ type: 'result', result }),
      (err: unknown) => reply({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  process.stdout.write('load generator ready\n');
}
