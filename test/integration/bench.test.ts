// The bench harness, once at tiny size: it must start the whole stack, drive every phase, and prove
// correctness. Speed is never asserted here (BENCHMARKS.md is where figures go).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { tinyOptions } from '../../bench/options.js';
import { runBench, type BenchOutcome } from '../../bench/run.js';
import { isExecutable } from '../../src/embedded/temporal-cli.js';
import { clusterToolPaths } from '../../tools/cluster/builds.js';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-bench-'));
const benchmarksPath = path.join(scratch, 'BENCHMARKS.md');

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

describe('npm run bench, tiny', () => {
  let outcome: BenchOutcome;

  // Every phase at its tiny size takes three to five minutes beside the rest of the suite, up to seven on a loaded machine.
  it('runs every phase against the real stack and keeps every accepted child', { timeout: 600_000 }, async () => {
    outcome = await runBench({
      ...tinyOptions,
      databaseUrl: inject('databaseUrl'),
      temporalAddress: inject('temporalAddress'),
      resultsDir: path.join(scratch, 'results'),
      benchmarksPath,
      log: () => undefined,
    });
    const { correctness } = outcome.report;

    expect(correctness.acceptedChildren).toBeGreaterThan(0);
    expect(correctness.missingExamples).toEqual([]);
    expect(correctness.missingFromDecisions).toBe(0);
    expect(correctness.duplicateAlbumReady).toBe(0);
    expect(correctness.albumsWithoutReady).toBe(0);
    expect(correctness.ingressAlone?.acceptedChildren).toBeGreaterThan(0);
    expect(correctness.ingressAlone?.notStored).toBe(0);
    expect(correctness.media?.attachments).toBeGreaterThan(0);
    expect(correctness.media?.notDownloaded).toEqual({});
    expect(correctness.ok).toBe(true);
  });

  it('reports every section with numbers', () => {
    const { report } = outcome;

    expect(report.ingest.length).toBe(tinyOptions.rates!.length + 1);
    for (const step of report.ingest) {
      for (const side of [step.ceiling, step.app]) {
        expect(side.accepted).toBeGreaterThan(0);
        expect(isNumber(side.acceptedPerS) && side.acceptedPerS > 0).toBe(true);
        expect(isNumber(side.ackMs.p50) && isNumber(side.ackMs.p99)).toBe(true);
      }
      expect(isNumber(step.throughputRatio)).toBe(true);
      expect(isNumber(step.p99Ratio)).toBe(true);
    }
    for (const { ingressAlone: alone } of report.ingest) {
      expect(alone?.stats.accepted).toBeGreaterThan(0);
      expect(isNumber(alone?.stats.ackMs.p99) && isNumber(alone.throughputRatio) && isNumber(alone.p99Ratio)).toBe(true);
    }

    expect(report.routes?.routes.map((route) => route.route)).toEqual(['unifyport', 'telegram', 'line']);
    for (const { stats, ingressCpuMsPerRequest } of report.routes!.routes) {
      expect(stats.accepted).toBeGreaterThan(0);
      expect(stats.failures).toEqual({});
      expect(isNumber(stats.ackMs.p50) && isNumber(stats.ackMs.p99)).toBe(true);
      expect(isNumber(ingressCpuMsPerRequest) && ingressCpuMsPerRequest > 0).toBe(true);
    }

    const tracing = report.tracing!;
    expect(tracing.runs.map((run) => `${run.variant} ${run.round}`)).toEqual([
      'off 1',
      'sampled out 1',
      '100% 1',
      '100% 2',
      'sampled out 2',
      'off 2',
    ]);
    for (const run of tracing.runs) {
      expect(run.stats.accepted).toBeGreaterThan(0);
      expect(run.stats.failures).toEqual({});
      expect(isNumber(run.ingressCpuMsPerRequest) && isNumber(run.appCpuMsPerChild)).toBe(true);
    }
    // Only the app at 100% sampling exports spans: more than one per child (its webhook, its batch, its workflow's).
    expect(tracing.spans.off).toBe(0);
    expect(tracing.spans['sampled out']).toBe(0);
    expect(tracing.spansPerChild).toBeGreaterThan(1);
    expect(tracing.spansRefused).toBe(0);

    // The media store step: both stores took the same albums; every photo downloaded, its object in its store once.
    const mediaStore = report.mediaStore!;
    expect(mediaStore.unavailable).toBeNull();
    expect(mediaStore.variants.map((variant) => variant.store)).toEqual(['directory', 's3']);
    for (const { check, rounds, workerCpuMsPerChild, peakRssMB } of mediaStore.variants) {
      expect(check.downloaded).toBeGreaterThan(0);
      expect(check).toMatchObject({ photos: check.downloaded, objects: check.downloaded, missing: 0, extra: 0, notDownloaded: {} });
      expect(rounds.map((run) => run.videos)).toEqual([false, true, true]);
      expect(isNumber(workerCpuMsPerChild) && isNumber(peakRssMB)).toBe(true);
    }
    expect(mediaStore.variants[1]!.check.localObjects).toBe(0);
    expect(mediaStore.ok).toBe(true);

    // Outbound delivery: every notification at the receiver, in order per album, from the engine and (the
    // same bodies) from the ceiling; the backlog of the outage drained within the endpoint's rate limit.
    const delivery = report.delivery!;
    const { throughput, drain } = delivery;
    expect(throughput.notifications).toBeGreaterThan(0);
    expect(throughput.check).toEqual({
      notifications: throughput.notifications,
      arrived: throughput.notifications,
      outOfOrder: 0,
      unverified: 0,
      ok: true,
    });
    expect(throughput.ceiling.delivered).toBe(throughput.notifications);
    for (const sender of [throughput.engine, throughput.ceiling]) {
      expect(isNumber(sender.perS) && sender.perS > 0).toBe(true);
      expect(isNumber(sender.cpuMsPerNotification)).toBe(true);
    }
    expect(isNumber(throughput.throughputRatio) && isNumber(throughput.cpuRatio)).toBe(true);
    expect(drain.check).toEqual({
      notifications: drain.notifications,
      arrived: drain.notifications,
      outOfOrder: 0,
      unverified: 0,
      ok: true,
    });
    // The receiver refused the attempts of the outage; the whole backlog waited for the recovery.
    expect(drain.refused).toBeGreaterThan(0);
    expect(drain.backlog).toBe(drain.notifications);
    expect(drain.withinRateLimit).toBe(true);
    expect(isNumber(drain.pacePerS) && isNumber(drain.drainS)).toBe(true);
    expect(delivery.ok).toBe(true);

    const sustained = report.endToEnd.find((e) => e.phase === report.sustainedPhase);
    expect(sustained).toBeDefined();
    const decidedAlbums = report.endToEnd.flatMap((e) => [e.withTotal, e.withoutTotal]).filter((side) => side.albums > 0);
    expect(decidedAlbums.length).toBeGreaterThan(0);
    for (const side of decidedAlbums) expect(isNumber(side.ms.p50) && isNumber(side.ms.p99)).toBe(true);
    for (const phase of [report.sustainedPhase, report.burstPhase]) {
      const figures = report.endToEnd.find((e) => e.phase === phase);
      expect(figures?.media?.attachments).toBeGreaterThan(0);
      expect(figures?.media?.downloaded).toBe(figures?.media?.attachments);
      const settled = [figures!.withTotal, figures!.withoutTotal].filter((side) => side.albums > 0);
      for (const side of settled) expect(side.mediaSettledMs?.count).toBe(side.albums);
    }
    const ingestFigures = report.endToEnd.find((e) => e.phase.startsWith('ingest'));
    expect(ingestFigures?.media).toBeNull();

    expect(report.temporalCounts.map((counts) => counts.phase)).toEqual([report.sustainedPhase, report.burstPhase, report.baselinePhase]);
    for (const counts of report.temporalCounts) {
      expect(counts.albums).toBeGreaterThan(0);
      expect(counts.runs).toBeGreaterThanOrEqual(counts.albums);
      // Every album downloads its photos' attachments with activities; every album is started once and signalled.
      expect(counts.total.activities).toBeGreaterThanOrEqual(counts.albums);
      expect(counts.total.signals).toBeGreaterThanOrEqual(counts.albums);
      expect(counts.total.billableActions).toBeGreaterThan(counts.total.activities);
      expect(isNumber(counts.perPhoto.billableActions) && counts.perPhoto.billableActions > 0).toBe(true);
    }
    // The baseline: a signal for every child (redeliveries too) and a download activity for every attachment.
    const baseline = report.temporalCounts.find((counts) => counts.phase === report.baselinePhase)!;
    expect(baseline.total.signals).toBeGreaterThanOrEqual(baseline.photos);
    expect(baseline.total.activities).toBeGreaterThanOrEqual(baseline.photos);

    // Four searches: the dev server and the real server, each with and without media.
    expect(report.knee.map((knee) => `${knee.server} ${knee.media ? 'media' : 'no media'}`)).toEqual([
      'dev media',
      'dev no media',
      'real media',
      'real no media',
    ]);
    // The real server's searches run when its binaries are in the tool cache, and say how to build them when not.
    const realServerBuilt = isExecutable(clusterToolPaths().server) && isExecutable(clusterToolPaths().sqlTool);
    for (const knee of report.knee) {
      expect(knee.targetMs).toBe(tinyOptions.quietPeriodMs! + 500);
      if (knee.server === 'real' && !realServerBuilt) {
        expect(knee.notMeasured).toBe('npm run temporal:cluster -- --install builds it');
        expect(knee.steps).toEqual([]);
        continue;
      }
      expect(knee.notMeasured).toBeNull();
      expect(knee.steps.length).toBeGreaterThan(0);
      for (const step of knee.steps) {
        expect(step.albums).toBeGreaterThan(0);
        expect(isNumber(step.childrenPerS) && isNumber(step.p99Ms) && isNumber(step.cpuMsPerChild)).toBe(true);
      }
      // A search stops at the first step that misses; every step before it held.
      expect(knee.steps.slice(0, -1).every((step) => step.met)).toBe(true);
    }

    const burst = report.temporalCost.find((cost) => cost.phase === report.burstPhase);
    expect(burst?.children).toBeGreaterThan(0);
    expect(isNumber(burst?.signalsPerChild)).toBe(true);
    expect(burst!.signalWithStarts).toBeGreaterThan(0);

    expect(report.scale.openAlbums).toBeGreaterThanOrEqual(tinyOptions.openAlbums!);
    for (const name of ['ingress', 'worker', 'ceiling', 'load', 'ingress alone', 'media']) {
      const memory = report.scale.processes[name];
      expect(isNumber(memory?.hwmMB) && memory.hwmMB > 0).toBe(true);
      expect(isNumber(memory?.peakRssMB) && memory.peakRssMB > 0).toBe(true);
    }

    expect(report.targets.map((target) => target.name)).toEqual(
      expect.arrayContaining([
        'Ingest throughput (closed loop)',
        'Group commit (closed loop, ingress alone)',
        'Signals per child (10-photo bursts)',
        'Billable Temporal actions per photo (sustained, with downloads)',
        'Completion p99 (total known): the knee, dev server, with media',
        'Completion p99 (total known): the knee, dev server, no media',
        'Completion p99 (total known): the knee, real server, with media',
        'Completion p99 (total known): the knee, real server, no media',
        'Tracing on, every trace sampled out (ingest)',
        'Backlog drain after an outage (delivery)',
        'Correctness',
      ]),
    );
    expect(report.versions.PostgreSQL).toMatch(/^\d+/);
    expect(report.machine.cores).toBeGreaterThan(0);
  });

  it('writes the JSON and the markdown section where it was told, not to the repository', () => {
    const saved = JSON.parse(fs.readFileSync(outcome.jsonPath, 'utf8')) as { correctness: { ok: boolean } };
    expect(saved.correctness.ok).toBe(true);
    expect(outcome.jsonPath.startsWith(scratch)).toBe(true);

    const markdown = fs.readFileSync(benchmarksPath, 'utf8');
    expect(markdown).toMatch(/^# Benchmarks/);
    expect(markdown).toContain(outcome.markdown);
    for (const heading of [
      '### Targets',
      '### Ingest against the ceiling',
      '### The webhook routes',
      '### Tracing',
      '### Media store: the directory against S3',
      '### Outbound delivery',
      '### The knee',
      '### The whole app, phase by phase',
      '### Temporal counts',
      '### Resident memory',
      '### Correctness',
    ]) {
      expect(markdown).toContain(heading);
    }
  });
});
