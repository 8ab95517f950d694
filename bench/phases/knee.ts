// The knee searches: sustained steps at rising offered rates, each settled before the next, until the
// completion p99 (total known) leaves QUIET_PERIOD_MS + 500 ms; the highest rate that stayed within it is
// the knee. Four searches in one run: on the stack's Temporal server (the dev server) and on the real server
// (tools/cluster/, on the run's PostgreSQL, with an app of its own), each with every child's attachment
// downloaded and without URLs. The dev server's step at 100/s with media is the CPU target's figure.
import { setTimeout as sleep } from 'node:timers/promises';
import { endToEnd } from '../end-to-end.js';
import { attachmentOutcomes, mediaSettledOf, recordedDecisions } from '../../test/harness/rows.js';
import type { PhaseResult } from '../../test/harness/load.js';
import type { Pool } from '../../src/db/pool.js';
import { temporalServerVersion } from '../../tools/cluster/versions.js';
import type { LoadPhase } from '../load.js';
import { acceptedChildren, newChildren } from '../records.js';
import {
  appCpuMsPerChild,
  kneeLabel,
  kneePhase,
  kneeSearches,
  kneeStepMet,
  kneeTargetMs,
  postgresPerChild,
  type Knee,
  type KneeServer,
  type KneeStep,
  type PhaseCpu,
} from '../report.js';
import type { RealTemporal } from '../stack.js';
import type { PhaseContext } from './context.js';

type KneeSearch = { server: KneeServer; media: boolean };

/** Where a search's steps go: the app it loads, and the names its processes' CPU is recorded under. */
interface SearchApp {
  url: string;
  pool: Pool;
  run: (name: string, phase: LoadPhase, media: boolean) => Promise<PhaseResult>;
  /** The CPU record of a step's phase. */
  cpuPhase: (name: string) => string;
  /** The names the app's ingress, worker and Temporal server are watched under. */
  processes: { ingress: string; worker: string; temporal: string };
}

const realServerName = `the Temporal server ${temporalServerVersion} on PostgreSQL`;
/** The CPU record of the app at rest before the searches. */
export const idlePhase = 'idle: the app without load';
const idleSeconds = 10;
const realServerMissing = 'npm run temporal:cluster -- --install builds it';

export async function runKnee(ctx: PhaseContext): Promise<Knee[]> {
  const { options, stack } = ctx;
  const targetMs = kneeTargetMs(options.quietPeriodMs);
  const serverName = (server: KneeServer) => (server === 'dev' ? stack.temporalName : realServerName);
  const unmeasured = (search: KneeSearch, why: string): Knee => ({
    ...search,
    serverName: serverName(search.server),
    targetMs,
    steps: [],
    highestMet: null,
    notMeasured: why,
  });
  if (!ctx.runs('knee')) return kneeSearches.map((search) => unmeasured(search, 'the knee phase did not run'));
  const searchOn = async (search: KneeSearch, app: SearchApp): Promise<Knee> =>
    search.media && !ctx.media
      ? unmeasured(search, '--no-media')
      : { ...search, serverName: serverName(search.server), targetMs, ...(await runSearch(ctx, search, app, targetMs)), notMeasured: null };

  const knees: Knee[] = [];
  const main: SearchApp = {
    url: stack.ingress.readyMatch,
    pool: stack.pool,
    run: (name, phase, media) => ctx.runAppPhase(name, phase, { media, countHistories: false }),
    cpuPhase: (name) => `${name}, app`,
    processes: { ingress: 'ingress', worker: 'worker', temporal: 'temporal' },
  };
  // What the processes take with nothing to do (pollers, timers, the servers' own housekeeping): the capacity
  // model (docs/scaling.md) adds it to what each photo costs.
  await ctx.measureCpu(idlePhase, () => sleep(idleSeconds * 1000, undefined, { signal: options.signal }));
  for (const search of kneeSearches.filter((s) => s.server === 'dev')) knees.push(await searchOn(search, main));

  const realSearches = kneeSearches.filter((s) => s.server === 'real');
  // A server that is not built, or does not start, costs the run its two searches, not the run.
  const startedAt = Date.now();
  let real: RealTemporal | null;
  try {
    real = await stack.startRealTemporal();
  } catch (err) {
    options.log(`bench: the real Temporal server did not start: ${(err as Error).message}`);
    const why = `the real server did not start (${(err as Error).message.split('\n')[0]}; the run's temporal-server folder has its log)`;
    return [...knees, ...realSearches.map((search) => unmeasured(search, why))];
  }
  if (!real) {
    options.log(`bench: the real Temporal server is not in the tool cache (${realServerMissing}); its knee searches are not measured`);
    return [...knees, ...realSearches.map((search) => unmeasured(search, realServerMissing))];
  }
  try {
    // An app of its own on the real server: its database and task queue; it prepares the namespace as any albumflow start does.
    const app = await stack.startVariant('knee', { env: { TEMPORAL_ADDRESS: real.address } });
    options.log(`bench: the real Temporal server and its app serve, ${Math.round((Date.now() - startedAt) / 1000)} s after the start`);
    try {
      const variant: SearchApp = {
        url: app.url,
        pool: app.pool,
        run: (name, phase, media) => ctx.runVariantPhase(name, app, phase, { media }),
        cpuPhase: (name) => `${name}, ${app.name}`,
        processes: { ingress: `${app.name} ingress`, worker: `${app.name} worker`, temporal: real.watchedAs },
      };
      for (const search of realSearches) knees.push(await searchOn(search, variant));
    } finally {
      await app.stop();
    }
  } finally {
    await real.stop();
  }
  options.log(`bench: the real server's knee searches took ${Math.round((Date.now() - startedAt) / 1000)} s, its start-up included`);
  return knees;
}

/** One search: steps from kneeStartRate up by kneeStepRate until one misses the target or kneeMaxRate is passed. */
async function runSearch(
  ctx: PhaseContext,
  search: KneeSearch,
  app: SearchApp,
  targetMs: number,
): Promise<Pick<Knee, 'steps' | 'highestMet'>> {
  const { options } = ctx;
  const media = search.media ? ctx.media : undefined;
  const steps: KneeStep[] = [];
  let highestMet: number | null = null;
  for (let rate = options.kneeStartRate; rate <= options.kneeMaxRate; rate += options.kneeStepRate) {
    const name = kneePhase(search, rate);
    const { records } = await app.run(
      name,
      ctx.loadPhase(app.url, {
        // The same albums at a rate in every search; ids of their own, as two searches share the main app's database.
        workload: ctx.workload(`k${search.server[0]}${search.media ? 'm' : 'n'}${rate}-`, options.seed + 500 + rate, { media }),
        rate,
        durationMs: options.kneeSeconds * 1000,
        concurrency: options.concurrency,
      }),
      media !== undefined,
    );
    const workflowIds = [...acceptedChildren(records).keys()];
    const figures = endToEnd(
      name,
      records,
      {
        decisions: await recordedDecisions(app.pool, workflowIds),
        mediaSettled: media ? await mediaSettledOf(app.pool, workflowIds) : null,
        attachments: media ? await attachmentOutcomes(app.pool, workflowIds) : null,
      },
      options.quietPeriodMs,
    );
    const cpu = ctx.cpu.find((phase) => phase.phase === app.cpuPhase(name));
    const step: KneeStep = {
      rate,
      childrenPerS: figures.childrenPerS,
      albums: figures.withTotal.albums,
      p99Ms: figures.withTotal.ms.p99,
      cpuMsPerChild: cpu ? appCpuMsPerChild(asApp(cpu, app.processes), newChildren(records)) : null,
      otherCores: cpu?.otherCores ?? null,
      postgresPerChild: postgresPerChild(cpu?.postgres, newChildren(records)),
      met: kneeStepMet(figures.withTotal.ms.p99, targetMs),
    };
    steps.push(step);
    options.log(
      `bench: knee (${kneeLabel(search)}) ${rate}/s: ${step.childrenPerS} children/s, p99 ${step.p99Ms} ms ` +
        `(target ${targetMs}), ${step.cpuMsPerChild} CPU ms per child`,
    );
    if (!step.met) break;
    highestMet = step.childrenPerS;
  }
  return { steps, highestMet };
}

/** A phase's CPU with the app's processes under the names the app's figures read (ingress, worker, temporal). */
function asApp(cpu: PhaseCpu, processes: SearchApp['processes']): PhaseCpu {
  const of = (name: string) => cpu.cpuS[name] ?? 0;
  return {
    ...cpu,
    cpuS: { ingress: of(processes.ingress), worker: of(processes.worker), temporal: of(processes.temporal), postgres: of('postgres') },
  };
}
