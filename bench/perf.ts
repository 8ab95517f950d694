// A CPU profile of the Temporal server, which no --cpu-prof reaches: Linux `perf` samples the server's
// process (the run's dev server, or a server of TEMPORAL_ADDRESS on this machine) for the whole run,
// with call stacks from Go's frame pointers, and the run writes what it found beside the Node profiles.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { summarizePerfReport, type PerfSummary } from './perf-summary.js';

export interface PerfRecording {
  /** Stops sampling and writes `perf.data`, `report.txt` and `summary.json` into the folder. */
  stop(): Promise<PerfSummary | null>;
}

/**
 * Samples per second and thread of the cpu-clock event (it counts nanoseconds on every machine, where
 * hardware cycles are not always there): a few percent's resolution over a phase, at little cost.
 */
const frequency = 199;

function perfAvailable(): boolean {
  const probe = spawnSync('perf', ['--version'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** Starts `perf record` on the process, or says why the Temporal server is not profiled and returns null. */
export function recordPerf(pid: number, dir: string, log: (line: string) => void): PerfRecording | null {
  if (!perfAvailable()) {
    log('bench: `perf` is not on PATH, so the Temporal server is not profiled (Debian: apt-get install linux-perf)');
    return null;
  }
  fs.mkdirSync(dir, { recursive: true });
  const dataFile = path.join(dir, 'perf.data');
  const errors: string[] = [];
  const recorder = spawn(
    'perf',
    ['record', '--quiet', '-e', 'cpu-clock', '-F', String(frequency), '-g', '-p', String(pid), '-o', dataFile],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  recorder.stderr.on('data', (chunk: Buffer) => errors.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => recorder.once('exit', (code) => resolve(code)));
  return {
    async stop() {
      // SIGINT is how perf record is told to finish: it writes the file's header and exits.
      recorder.kill('SIGINT');
      const code = await exited;
      if (!fs.existsSync(dataFile) || fs.statSync(dataFile).size === 0) {
        log(`bench: perf record on the Temporal server wrote no profile (exit ${code}): ${errors.join('').trim().slice(-300)}`);
        return null;
      }
      // Per symbol, the time spent under it (callees included) and in it, as perf sees them.
      const report = spawnSync('perf', ['report', '-i', dataFile, '--stdio', '--children', '--sort', 'sym', '-g', 'none'], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }).stdout;
      fs.writeFileSync(path.join(dir, 'report.txt'), report);
      const summary = summarizePerfReport(report);
      fs.writeFileSync(path.join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
      return summary;
    },
  };
}
