import fs from 'node:fs';
import path from 'node:path';
import { findGo, goInstall, isExecutable, toolCacheDir } from '../../src/embedded/temporal-cli.js';
import { clusterTools, type ClusterTool } from './versions.js';

export type ClusterToolPaths = Record<keyof typeof clusterTools, string>;

/** Go's module and build caches for these builds: several gigabytes, kept beside the tool cache, never in the clone. */
export function goCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(path.dirname(toolCacheDir(env)), 'go');
}

/**
 * The Temporal server, its SQL tool and the UI server from the tool cache, each built with `go install`
 * (Go from PATH or /usr/local/go/bin) when it is not there yet.
 */
export async function locateClusterTools(
  options: { env?: NodeJS.ProcessEnv; log?: (message: string) => void } = {},
): Promise<ClusterToolPaths> {
  const located: Partial<ClusterToolPaths> = {};
  for (const [name, tool] of Object.entries(clusterTools) as Array<[keyof ClusterToolPaths, ClusterTool]>) {
    located[name] = await locateTool(tool, options);
  }
  return located as ClusterToolPaths;
}

/** Each tool's file in the tool cache, whether it is built there yet or not (nothing is built). */
export function clusterToolPaths(env: NodeJS.ProcessEnv = process.env): ClusterToolPaths {
  const paths: Partial<ClusterToolPaths> = {};
  for (const [name, tool] of Object.entries(clusterTools) as Array<[keyof ClusterToolPaths, ClusterTool]>)
    paths[name] = toolPath(tool, env);
  return paths as ClusterToolPaths;
}

function toolPath(tool: ClusterTool, env: NodeJS.ProcessEnv): string {
  return path.join(toolCacheDir(env), tool.binary);
}

/** One tool from the tool cache, built there with `go install` (Go from PATH or /usr/local/go/bin) when it is not there yet. */
export async function locateTool(
  tool: ClusterTool,
  options: { env?: NodeJS.ProcessEnv; log?: (message: string) => void } = {},
): Promise<string> {
  const env = options.env ?? process.env;
  const file = toolPath(tool, env);
  if (!isExecutable(file)) await build(tool, file, env, options.log ?? (() => undefined));
  return file;
}

async function build(tool: ClusterTool, file: string, env: NodeJS.ProcessEnv, log: (message: string) => void): Promise<void> {
  const go = findGo(env);
  if (!go) {
    throw new Error(
      `${tool.what} is not in ${path.dirname(file)} and Go is not installed. Install Go (the version the module's go.mod names, ` +
        `or a newer one) so that albumflow can run \`go install ${tool.module}\`, or put the binary there as ${tool.binary}.`,
    );
  }
  const caches = goCacheDir(env);
  log(`${tool.what} is not built yet; running go install ${tool.module} (Go caches in ${caches}; the first build takes several minutes)…`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // `go install` names the binary after its package's directory (two of these are `server`): build each
  // into a directory of its own, then move it to its name in the cache.
  const gobin = fs.mkdtempSync(path.join(path.dirname(file), `.build-${tool.binary}-`));
  try {
    await goInstall(
      go,
      {
        module: tool.module,
        what: tool.what,
        gobin,
        env: { GOMODCACHE: path.join(caches, 'mod'), GOCACHE: path.join(caches, 'build'), CGO_ENABLED: '0' },
      },
      log,
      env,
    );
    const [built] = fs.readdirSync(gobin);
    if (!built) throw new Error(`go install ${tool.module} finished but left no binary in ${gobin}`);
    fs.renameSync(path.join(gobin, built), file);
  } finally {
    fs.rmSync(gobin, { recursive: true, force: true });
  }
}
