// What a run measured: the commit of the working tree, and the versions of everything in the stack.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { locateTemporalCli } from '../src/embedded/temporal-cli.js';
import { readGoBuildInfo, type GoBuildInfo } from './go-build-info.js';
import { repoRoot } from './options.js';
import { serverVersion } from '../test/harness/rows.js';
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

/** The version the CLI prints when its build set none (a `go install`, or a build from a working copy). */
const unsetCliVersion = '0.0.0-DEV';

/**
 * The Temporal CLI's version from `temporal --version` (`temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)`):
 * the server and UI it embeds are always right, the CLI's own only in a release build; otherwise it is
 * the main module's version in the binary's Go build information.
 */
export function describeTemporalCli(versionOutput: string, buildInfo: GoBuildInfo | null): string {
  const printed = versionOutput.trim().replace(/^temporal version /, '');
  if (!printed.startsWith(`${unsetCliVersion} `) && printed !== unsetCliVersion) return printed;
  const embedded = printed.slice(unsetCliVersion.length);
  const main = buildInfo?.main;
  if (!main?.version) return printed;
  if (main.version === '(devel)') {
    const revision = buildInfo?.settings['vcs.revision'];
    return `built from a working copy${revision ? ` at ${revision.slice(0, 12)}` : ''}${embedded}`;
  }
  return `${main.version.replace(/^v/, '')}${embedded}`;
}

async function temporalCliVersion(): Promise<string> {
  const cli = await locateTemporalCli({ allowBuild: false });
  if (cli.kind !== 'binary') return 'SDK download';
  const { stdout } = await promisify(execFile)(cli.path, ['--version']);
  const buildInfo = stdout.includes(unsetCliVersion) ? await readGoBuildInfo(cli.path).catch(() => null) : null;
  return describeTemporalCli(stdout, buildInfo);
}

/**
 * `devServer`: the run started the Temporal CLI's dev server (no TEMPORAL_ADDRESS), so the CLI's version
 * is the server's; otherwise the server at TEMPORAL_ADDRESS names its own.
 */
export async function stackVersions(stack: Stack, measuredSource: Promise<string>, devServer: boolean): Promise<Record<string, string>> {
  const systemInfo = await stack.connection.workflowService.getSystemInfo({});
  const server = systemInfo.serverVersion || 'unknown';
  return {
    albumflow: await measuredSource,
    node: process.version,
    PostgreSQL: await serverVersion(stack.pool),
    ...(devServer
      ? { 'Temporal CLI': await temporalCliVersion().catch(() => 'unknown'), 'Temporal server': `${server} (the CLI's dev server)` }
      : { 'Temporal server': `${server} (at TEMPORAL_ADDRESS)` }),
    '@temporalio/worker': packageVersion('@temporalio/worker'),
    fastify: packageVersion('fastify'),
    pg: packageVersion('pg'),
  };
}
