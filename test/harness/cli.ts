import { execFile } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../src/common/paths.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as users do (`npx albumflow …` runs bin/albumflow.js), in its own process, with this environment added. */
export function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(projectRoot, 'bin/albumflow.js'), ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}
