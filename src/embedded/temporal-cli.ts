import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';

/** The newest Temporal CLI release that `go install` accepts (later tags use a `replace` directive). */
export const temporalCliModule = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export type TemporalCli =
  | { kind: 'binary'; path: string; source: 'TEMPORAL_CLI_PATH' | 'PATH' | 'cache' | 'go install' }
  /** No binary found or buildable: let the Temporal SDK download its own dev server. */
  | { kind: 'sdk-download' };

export interface LocateOptions {
  env?: NodeJS.ProcessEnv;
  log?: (message: string) => void;
  /** Build with Go when nothing else is found (default true). */
  allowBuild?: boolean;
}

export function toolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'albumflow', 'bin');
}

const exe = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

export function findGo(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const goName = process.platform === 'win32' ? 'go.exe' : 'go';
  return onPath(goName, env) ?? [path.join('/usr/local/go/bin', goName)].find(isExecutable);
}

/**
 * Finds the Temporal CLI in the order docs/operations.md gives: TEMPORAL_CLI_PATH, `temporal` on PATH, the
 * tool cache, a `go install` into the tool cache, and last the SDK's own download.
 */
export async function locateTemporalCli(options: LocateOptions = {}): Promise<TemporalCli> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => undefined);

  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return { kind: 'binary', path: explicit, source: 'TEMPORAL_CLI_PATH' };
  }
  const fromPath = onPath(exe, env);
  if (fromPath) return { kind: 'binary', path: fromPath, source: 'PATH' };

  const cached = path.join(toolCacheDir(env), exe);
  if (isExecutable(cached)) return { kind: 'binary', path: cached, source: 'cache' };

  const go = findGo(env);
  if (go && options.allowBuild !== false) {
    log(`Temporal CLI not found; building ${temporalCliModule} with ${go} into ${toolCacheDir(env)} (a few minutes the first time)…`);
    try {
      await goInstall(
        go,
        {
          module: temporalCliModule,
          what: 'the Temporal CLI',
          gobin: toolCacheDir(env),
          env: { GOFLAGS: [env.GOFLAGS, '-trimpath'].filter(Boolean).join(' ') },
        },
        log,
        env,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${installHint()}`);
    }
    if (isExecutable(cached)) return { kind: 'binary', path: cached, source: 'go install' };
    throw new Error(`go install finished but ${cached} is missing`);
  }
  log(
    `Temporal CLI not found and ${go ? 'building it is disabled' : 'Go is not installed'}; falling back to the Temporal SDK download of the dev server.`,
  );
  return { kind: 'sdk-download' };
}

export interface GoInstall {
  /** `module/path/cmd@version`. */
  module: string;
  /** What is built, for the progress messages. */
  what: string;
  gobin: string;
  /** Variables added to the environment `go install` runs with. */
  env?: Record<string, string>;
}

/** Runs `go install` into `gobin`, logging progress while it runs (a cold build takes minutes). */
export async function goInstall(
  go: string,
  build: GoInstall,
  log: (m: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  fs.mkdirSync(build.gobin, { recursive: true });
  const started = Date.now();
  const child = spawn(go, ['install', build.module], {
    env: { ...env, ...build.env, GOBIN: build.gobin },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const ticker = setInterval(() => log(`  still building ${build.what} (${Math.round((Date.now() - started) / 1000)} s)…`), 30_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  }).finally(() => clearInterval(ticker));
  if (code !== 0) throw new Error(`go install ${build.module} failed (exit ${code}).\n${output.trim()}`);
  log(`Built ${build.what} in ${Math.round((Date.now() - started) / 1000)} s.`);
}

/**
 * The Temporal SDK's own download of the dev server, moved into the tool cache as the CLI, so albumflow
 * runs and supervises it like any other (and finds it there next time). The SDK only downloads when it
 * starts a server: it starts a throwaway one, in memory, and stops it.
 */
export async function downloadWithSdk(log: (message: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = toolCacheDir(env);
  fs.mkdirSync(dir, { recursive: true });
  log(`downloading the Temporal dev server with the Temporal SDK into ${dir}…`);
  try {
    const server = await TestWorkflowEnvironment.createLocal({
      server: { ui: false, executable: { type: 'cached-download', downloadDir: dir } },
    });
    await server.teardown();
  } catch (err) {
    throw new Error(`could not download the Temporal dev server: ${(err as Error).message}\n${installHint()}`);
  }
  const downloaded = fs.readdirSync(dir).find((name) => name.startsWith('temporal-sdk-') && !name.endsWith('.downloading'));
  if (!downloaded) throw new Error(`the Temporal SDK reported a download, but ${dir} holds no temporal-sdk-* file`);
  const cli = path.join(dir, exe);
  fs.renameSync(path.join(dir, downloaded), cli);
  return cli;
}

export function installHint(): string {
  return (
    'Install the Temporal CLI (https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI_PATH, ' +
    `or install Go so albumflow can run \`go install ${temporalCliModule}\`, ` +
    'or point TEMPORAL_ADDRESS at a running Temporal server.'
  );
}
