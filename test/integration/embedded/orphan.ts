import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { findProcess, type ServerRecord } from '../../../src/embedded/ownership.js';
import { projectRoot } from '../../../src/common/paths.js';

const modules = { startEmbeddedPostgres: 'src/embedded/postgres.ts', startDevServer: 'src/embedded/temporal.ts' } as const;

/**
 * Kills the watchdog of an embedded server (src/embedded/server.ts), as something that kills every
 * process but the server would: the server then outlives its albumflow, and only the next start can
 * stop it.
 */
export function killWatchdog(serverPid: number): void {
  const pid = findProcess((args) => args.includes(`albumflow-watchdog-${serverPid}`));
  if (pid === undefined) throw new Error(`no watchdog of pid ${serverPid} runs`);
  process.kill(pid, 'SIGKILL');
}

/**
 * Starts an embedded server from a process of its own, then kills that process and the server's
 * watchdog with kill -9: the server is left behind, as by an albumflow that died with its watchdog.
 * Returns the dead owner's pid and the server's record.
 */
export async function leaveOrphan(
  start: keyof typeof modules,
  options: Record<string, unknown>,
  recordFile: string,
): Promise<{ owner: number; orphan: ServerRecord }> {
  const script = `const { ${start} } = await import(${JSON.stringify(path.join(projectRoot, modules[start]))});
    await ${start}(${JSON.stringify(options)});
    console.log('serving');`;
  const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    owner.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('serving') && resolve());
    owner.once('exit', (code) => reject(new Error(`the owner exited (${code}) before its server served`)));
  });
  const orphan = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as ServerRecord;
  killWatchdog(orphan.pid);
  owner.kill('SIGKILL');
  await new Promise((resolve) => owner.once('exit', resolve));
  return { owner: owner.pid!, orphan };
}
