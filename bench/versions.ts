// What a run measured: the commit of the working tree, and the versions of everything in the stack.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { locateTemporalCli } from '../src/temporal/cli.js';
import { repoRoot } from './options.js';
import { serverVersion } from './queries.js';
import type { Stack } from './stack.js';

function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  return (require(`${name}/package.json`) as { version: string }).version;
}

/** The commit the run measured, and how many files of the working tree differed from it. */
export async function sourceVersion(): Promise<string> {
  const git = (args: string[]) => promisify(execFile)('git', args, { cwd: repoRoot }).then(({ stdout }) => stdout.trim());
  const commit = await git(['rev-parse', '--short', 'HEAD']);
  const changed = (await git(['status', '--porcelain', '--untracked-files=no'])).split('\n').filter(Boolean).length;
  return changed === 0 ? commit : `${commit} with ${changed} modified files`;
}

async function temporalCliVersion(): Promise<string> {
  const cli = await locateTemporalCli({ allowBuild: false });
  if (cli.kind !== 'binary') return 'SDK download';
  const { stdout } = await promisify(execFile)(cli.path, ['--version']);
  return stdout.trim().replace(/^temporal version /, '');
}

export async function stackVersions(stack: Stack, measuredSource: Promise<string>): Promise<Record<string, string>> {
  const systemInfo = await stack.connection.workflowService.getSystemInfo({});
  return {
    albumflow: await measuredSource,
    node: process.version,
    PostgreSQL: await serverVersion(stack.pool),
    'Temporal CLI': await temporalCliVersion().catch(() => 'unknown'),
    'Temporal server': systemInfo.serverVersion || 'unknown',
    '@temporalio/worker': packageVersion('@temporalio/worker'),
    fastify: packageVersion('fastify'),
    pg: packageVersion('pg'),
  };
}
