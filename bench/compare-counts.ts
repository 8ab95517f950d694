// `npm run bench:compare-counts -- <revision> [options of npm run bench]`: the Temporal counts of the
// sustained phase (bench/temporal-counts.ts: workflow tasks, history events, billable actions… per album and
// per photo) on another revision and on this checkout, in the same sitting. The revision is checked out as a
// git worktree in a temporary folder, its dependencies installed once per package-lock.json (this checkout's
// node_modules when the lock is the same, else a cache under ~/.cache/albumflow/bench-node-modules/). Each
// side's own bench runs the sustained phase alone (--phases sustained --no-benchmarks-md and the options
// given; by default a small size, --sustained-rate 50 --sustained-seconds 10), twice, in the order revision,
// checkout, checkout, revision. The noise is the largest difference between two rounds of one side; the
// workflow tasks per album and billable actions per photo must not rise by more (else the exit code is 1).
// Prints the rounds, the difference of the means and the noise, keeps them (and every report) under
// bench/results/, and removes the worktree.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { repoRoot } from './options.js';
import type { BenchReport } from './report.js';
import type { PhaseCounts, TemporalCounts } from './temporal-counts.js';

/** The sustained phase's size when none is given: small, for its counts only. */
export const defaultSize = ['--sustained-rate', '50', '--sustained-seconds', '10'];

const usage =
  'npm run bench:compare-counts -- <revision> [options of npm run bench, e.g. --sustained-rate 50 --sustained-seconds 10]\n' +
  "Runs the sustained phase of <revision>'s own bench (a git worktree in a temporary folder) and this checkout's, twice each\n" +
  '(revision, checkout, checkout, revision), with the same options (without a size: --sustained-rate 50 --sustained-seconds 10),\n' +
  'and prints their Temporal counts, the difference of the means and the noise (the largest difference between two rounds of\n' +
  'one side); exits 1 when the workflow tasks per album or the billable actions per photo rose by more than the noise.\n' +
  'The options must be ones both benches know; DATABASE_URL and TEMPORAL_ADDRESS apply to both.\n';

/** The figures compared, per album unless said per photo. */
export const comparedFigures: ReadonlyArray<{ label: string; per: 'perAlbum' | 'perPhoto'; key: keyof TemporalCounts }> = [
  { label: 'workflow tasks per album', per: 'perAlbum', key: 'workflowTasks' },
  { label: 'history events per album', per: 'perAlbum', key: 'historyEvents' },
  { label: 'signals per album', per: 'perAlbum', key: 'signals' },
  { label: 'timers started per album', per: 'perAlbum', key: 'timersStarted' },
  { label: 'activities per album', per: 'perAlbum', key: 'activities' },
  { label: 'local activities per album', per: 'perAlbum', key: 'localActivities' },
  { label: 'search-attribute upserts per album', per: 'perAlbum', key: 'searchAttributeUpserts' },
  { label: 'billable actions per album', per: 'perAlbum', key: 'billableActions' },
  { label: 'billable actions per photo', per: 'perPhoto', key: 'billableActions' },
];

/** The figures issue 42 holds to "no rise". */
const heldFigures = ['workflow tasks per album', 'billable actions per photo'];

export interface CountsSide {
  /** The revision as given, or "this checkout". */
  label: string;
  /** The commit it measured (the checkout's with its modified files). */
  version: string;
  /** Its sustained phase's counts, round by round. */
  rounds: PhaseCounts[];
}

export interface ComparedFigure {
  label: string;
  /** Each round's. */
  before: number[];
  after: number[];
  /** The mean after − the mean before. */
  difference: number;
  /** The largest difference between two rounds of one side. */
  noise: number;
}

export interface CountsComparison {
  startedAt: string;
  /** The options both benches ran with. */
  arguments: string[];
  before: CountsSide;
  after: CountsSide;
  figures: ComparedFigure[];
  /** The held figures (workflow tasks per album, billable actions per photo) that rose by more than the noise. */
  rose: string[];
}

const rounded = (value: number) => Math.round(value * 1000) / 1000;
const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const spread = (values: readonly number[]) => Math.max(...values) - Math.min(...values);

export function compareCounts(startedAt: string, args: string[], before: CountsSide, after: CountsSide): CountsComparison {
  const figures = comparedFigures.map(({ label, per, key }): ComparedFigure => {
    const b = before.rounds.map((counts) => counts[per][key]);
    const a = after.rounds.map((counts) => counts[per][key]);
    return { label, before: b, after: a, difference: rounded(mean(a) - mean(b)), noise: rounded(Math.max(spread(a), spread(b))) };
  });
  const rose = figures.filter((f) => heldFigures.includes(f.label) && f.difference > f.noise).map((f) => f.label);
  return { startedAt, arguments: args, before, after, figures, rose };
}

const signed = (value: number) => (value > 0 ? `+${value}` : String(value));

/** The comparison as markdown: a table of the figures, and whether the held ones rose by more than the noise. */
export function renderComparison(comparison: CountsComparison): string {
  const { before, after } = comparison;
  const side = (s: CountsSide) =>
    `${s.label} (${s.version}; ${s.rounds.map((counts) => `${counts.albums} albums, ${counts.photos} photos`).join(' / ')})`;
  const held = heldFigures.join(' or ');
  return [
    `Temporal counts of the sustained phase (${comparison.arguments.join(' ')}), ${comparison.startedAt}; each side's rounds:`,
    '',
    `| figure | ${side(before)} | ${side(after)} | difference of the means | noise |`,
    '|---|---|---|---|---|',
    ...comparison.figures.map(
      (f) => `| ${f.label} | ${f.before.join(', ')} | ${f.after.join(', ')} | ${signed(f.difference)} | ${f.noise} |`,
    ),
    '',
    comparison.rose.length === 0
      ? `No rise beyond the noise in ${held}.`
      : `**Rose** beyond the noise: ${comparison.rose
          .map((label) => {
            const figure = comparison.figures.find((f) => f.label === label)!;
            return `${label} ${signed(figure.difference)} (noise ${figure.noise})`;
          })
          .join(', ')}.`,
    '',
  ].join('\n');
}

const git = (args: string[]) =>
  promisify(execFile)('git', args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 }).then(({ stdout }) => stdout.trim());

/** The command running now, told to stop when this process is (a Ctrl-C reaches it already, with its group). */
let running: ChildProcess | undefined;

/** Runs a command, its output to this process's stderr; answers its stdout, rejects on a non-zero exit. */
function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
    running = child;
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0
        ? resolve(stdout)
        : reject(new Error(`${command} ${args.join(' ')} in ${cwd}: exited ${signal ?? code}\n${stdout.slice(-2000)}`)),
    );
  });
}

function cacheRoot(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'albumflow', 'bench-node-modules');
}

/**
 * The node_modules for a tree with this package-lock.json: this checkout's when its lock is the same, else
 * one installed with `npm ci` under the cache, once per lock (and Node.js major version).
 */
async function nodeModulesFor(tree: string, log: (line: string) => void): Promise<string> {
  const lock = fs.readFileSync(path.join(tree, 'package-lock.json'));
  const own = path.join(repoRoot, 'node_modules');
  if (fs.existsSync(own) && lock.equals(fs.readFileSync(path.join(repoRoot, 'package-lock.json')))) return own;
  const hash = crypto.createHash('sha256').update(lock).update(process.versions.node.split('.')[0]!).digest('hex').slice(0, 16);
  const dir = path.join(cacheRoot(), hash);
  if (!fs.existsSync(path.join(dir, 'node_modules', '.package-lock.json'))) {
    const partial = `${dir}.partial-${process.pid}`;
    fs.rmSync(partial, { recursive: true, force: true });
    fs.mkdirSync(partial, { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(tree, file), path.join(partial, file));
    log(`bench: installing the revision's dependencies (npm ci) into ${dir}`);
    await run('npm', ['ci', '--no-audit', '--no-fund'], partial);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(partial, dir);
  }
  return path.join(dir, 'node_modules');
}

/** Runs a tree's bench with the arguments; answers its version and counts (its report copied to `keepAs`). */
async function benchCounts(tree: string, args: string[], keepAs: string): Promise<{ version: string; counts: PhaseCounts }> {
  const stdout = await run(
    process.execPath,
    ['--import', 'tsx', 'bench/run.ts', '--phases', 'sustained', '--no-benchmarks-md', ...args],
    tree,
  );
  const jsonPath = /^JSON: (.+)$/m.exec(stdout)?.[1];
  if (!jsonPath) throw new Error(`the bench in ${tree} printed no JSON path`);
  fs.copyFileSync(path.resolve(tree, jsonPath), keepAs);
  const report = JSON.parse(fs.readFileSync(keepAs, 'utf8')) as BenchReport;
  const counts = report.temporalCounts.find((c) => c.phase === report.sustainedPhase);
  if (!counts) throw new Error(`the bench in ${tree} counted no sustained phase`);
  return { version: report.versions.albumflow ?? 'unknown', counts };
}

export async function compareRevision(revision: string, given: string[], log: (line: string) => void): Promise<CountsComparison> {
  const startedAt = new Date().toISOString();
  const args = given.some((arg) => arg === '--sustained-rate' || arg === '--sustained-seconds' || arg === '--tiny')
    ? given
    : [...defaultSize, ...given];
  const commit = await git(['rev-parse', '--verify', `${revision}^{commit}`]);
  const recordDir = path.join(repoRoot, 'bench', 'results', `compare-counts-${startedAt.replace(/[:.]/g, '-')}`);
  fs.mkdirSync(recordDir, { recursive: true });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-counts-'));
  const tree = path.join(scratch, `albumflow-${commit.slice(0, 7)}`);
  const modules = path.join(tree, 'node_modules');
  log(`bench: ${revision} (${commit.slice(0, 12)}) checked out in ${tree}`);
  await git(['worktree', 'add', '--detach', tree, commit]);
  const before: CountsSide = { label: revision, version: commit.slice(0, 12), rounds: [] };
  const after: CountsSide = { label: 'this checkout', version: 'unknown', rounds: [] };
  try {
    fs.symlinkSync(await nodeModulesFor(tree, log), modules, 'dir');
    // Two rounds each, in the order revision, checkout, checkout, revision: a drift of the machine falls on both.
    for (const [round, side, dir] of [
      [1, before, tree],
      [1, after, repoRoot],
      [2, after, repoRoot],
      [2, before, tree],
    ] as const) {
      log(`bench: the sustained phase of ${side.label}, round ${round} (${args.join(' ')})`);
      const measured = await benchCounts(
        dir,
        args,
        path.join(recordDir, `${side === before ? 'revision' : 'checkout'}-report-${round}.json`),
      );
      side.version = measured.version;
      side.rounds.push(measured.counts);
    }
  } finally {
    // The link first: what it points to (this checkout's node_modules, or the cache) stays.
    fs.rmSync(modules, { force: true });
    await git(['worktree', 'remove', '--force', tree]).catch((err: Error) =>
      log(`bench: could not remove the worktree ${tree}: ${err.message}`),
    );
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  const comparison = compareCounts(startedAt, args, before, after);
  fs.writeFileSync(path.join(recordDir, 'comparison.json'), `${JSON.stringify(comparison, null, 2)}\n`);
  fs.writeFileSync(path.join(recordDir, 'comparison.md'), renderComparison(comparison));
  log(`bench: kept in ${recordDir}`);
  return comparison;
}

async function main(): Promise<void> {
  const [revision, ...given] = process.argv.slice(2);
  if (!revision || revision === '--help' || revision.startsWith('-')) {
    process.stdout.write(usage);
    if (revision !== '--help') process.exitCode = 2;
    return;
  }
  if (given.some((arg) => arg === '--phases' || arg.startsWith('--phases=') || arg === '--no-benchmarks-md')) {
    process.stderr.write(
      'bench:compare-counts runs the sustained phase alone and writes no BENCHMARKS.md: leave out --phases and --no-benchmarks-md\n',
    );
    process.exitCode = 2;
    return;
  }
  let interrupted = false;
  const stop = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\nbench:compare-counts: ${signal}, stopping the bench it runs (again to exit at once)\n`);
    // A Ctrl-C reaches the bench with this process's group; a SIGTERM only this process.
    if (signal === 'SIGTERM') running?.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const comparison = await compareRevision(revision, given, (line) => process.stderr.write(`${line}\n`));
    process.stdout.write(renderComparison(comparison));
    if (comparison.rose.length > 0) process.exitCode = 1;
  } catch (err) {
    process.stderr.write(`bench:compare-counts failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
