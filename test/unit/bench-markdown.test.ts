import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { benchmarksHeader, renderMarkdown, withRunSection } from '../../bench/markdown.js';
import { deliveryCheck, duration, evaluateTargets, type BenchReport, type DeliveryStep } from '../../bench/report.js';

const run = (at: string) => `## Run of ${at}\n\n- Machine: test\n\n### Targets\n\n| figure | met |\n|---|---|\n| one | yes |\n`;

// The figures of the full run of 2026-12-02 05:15 as BENCHMARKS.md showed them; what it did not show
// (requests sent, p90s of the ingest steps, history totals but the billable actions) is 0 or null.
const fullRun = JSON.parse(fs.readFileSync(new URL('../fixtures/bench/full-run.json', import.meta.url), 'utf8')) as Omit<
  BenchReport,
  'targets'
>;
const evaluated = (body: Omit<BenchReport, 'targets'>): BenchReport => ({ ...body, targets: evaluateTargets(body, 5000) });

/** The tables of a markdown text, each as its header cells. */
function tableHeaders(markdown: string): string[][] {
  const lines = markdown.split('\n');
  return lines
    .filter((line, i) => line.startsWith('| ') && lines[i + 1]?.startsWith('|---'))
    .map((line) =>
      line
        .slice(2, -2)
        .split(' | ')
        .map((c) => c.trim()),
    );
}

/** Tokens that read as abbreviated or full commit ids: 7–40 hex digits with a letter and a digit among them. */
const commitId = /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/g;

describe('BENCHMARKS.md after a bench run', () => {
  it('starts a missing file with the header, then the run', () => {
    const written = withRunSection(null, run('B'));
    expect(written.startsWith(benchmarksHeader)).toBe(true);
    expect(written).toBe(`${benchmarksHeader}\n${run('B')}`);
  });

  it('replaces the previous runs with the new one and keeps every other section as it is', () => {
    const standing = '## Where it stands\n\n| figure | measured |\n|---|---|\n| one | 1 |\n\n### What bounds it\n\n- the cores.\n';
    const current = `${benchmarksHeader}\n${standing}\n${run('A')}\n${run('A2')}`;
    const written = withRunSection(current, run('B'));
    expect(written).toBe(`${benchmarksHeader}\n${standing}\n${run('B')}`);
    expect(written).not.toContain('## Run of A');
    expect(withRunSection(written, run('C'))).toBe(`${benchmarksHeader}\n${standing}\n${run('C')}`);
  });
});

describe("a run's section", () => {
  const markdown = renderMarkdown(evaluated(fullRun));

  it('holds one table of targets: the figure, the target, what was measured, whether it is met, and what bounds a miss', () => {
    const targetTables = tableHeaders(markdown).filter((header) => header.includes('target'));
    expect(targetTables).toEqual([['figure', 'target', 'measured', 'met', 'what bounds it']]);
    const rows = markdown.split('\n').filter((line) => /^\| .* \| (yes|\*\*no\*\*|n\/a) \| .*\|$/.test(line));
    expect(rows).toHaveLength(18);
    for (const row of rows) {
      const cells = row.slice(2, -2).split(' | ');
      expect(cells).toHaveLength(5);
      if (cells[3] === '**no**') expect(cells[4]!.length).toBeGreaterThan(20);
      else expect(cells[4]!.trim()).toBe('');
    }
  });

  it('is short: the targets and the figures behind them, each phase in one row', () => {
    // Eighteen targets (a row each) and the four knee searches (a line each) among them.
    expect(markdown.split('\n').length).toBeLessThan(110);
    expect(markdown).toContain('| **sustained 150/s** | 141.4 | 259 / 268 | 45.4 s / 75.4 s | 75.2 s | 76.3 s / 75.3 s | 0.187 |');
    expect(markdown).toContain(
      '| knee 100/s (dev server, with media) | 94.8 | 96 / 87 | 14.5 s / 23.8 s | 24.7 s | 29.3 s / 25.1 s | 0.199 | 60.1 (3.8 / 28.9 / 21.9 / 5.6) | – | 1.9 / 0.14 |',
    );
    expect(markdown).toContain('| Telegram | 99.9 | 15.2 / 91.7 | 0 | – |');
    expect(markdown).toContain('Tracing was not measured (the tracing phase did not run).');
    expect(markdown).toContain('Outbound delivery was not measured (the delivery phase did not run).');
  });
});

// The delivery phase of a run at 1500 notifications (backlog 600, 4 s outage, rate limit 100/s).
const delivery: DeliveryStep = {
  concurrency: 4,
  throughput: {
    notifications: 1500,
    albums: 500,
    rateLimit: 1000,
    engine: { delivered: 1500, durationS: 16.98, perS: 88.3, cpuMsPerNotification: 4.233, postgresCpuMsPerNotification: 5.213 },
    ceiling: { delivered: 1500, durationS: 2.52, perS: 595.7, cpuMsPerNotification: 0.727 },
    throughputRatio: 0.15,
    cpuRatio: 5.82,
    check: { notifications: 1500, arrived: 1500, outOfOrder: 0, unverified: 0, ok: true },
  },
  drain: {
    notifications: 600,
    albums: 200,
    rateLimit: 100,
    outageS: 4,
    schedule: '0s,1s,2s,2s,2s,2s,2s,2s,2s',
    refused: 198,
    backlog: 600,
    firstDeliveryS: 0,
    drainS: 28.98,
    drainPerS: 20.7,
    rateRatio: 0.21,
    pacePerS: 20.7,
    withinRateLimit: true,
    check: { notifications: 600, arrived: 600, outOfOrder: 0, unverified: 0, ok: true },
  },
  ok: true,
};

describe("a run's delivery section", () => {
  const withDelivery = (step: DeliveryStep) => evaluated({ ...fullRun, delivery: step });

  it('says the ingest was not compared when its phase did not run, rather than show an empty table', () => {
    const markdown = renderMarkdown(evaluated({ ...fullRun, ingest: [] }));
    const section = markdown.slice(markdown.indexOf('### Ingest against the ceiling'), markdown.indexOf('### The webhook routes'));
    expect(section).toContain('The ingest was not compared with the ceiling (the ingest phase did not run).');
    expect(section).not.toContain('| offered |');
  });

  it('sets the engine against the ceiling in one table, and the drain against the rate limit in a sentence', () => {
    const markdown = renderMarkdown(withDelivery(delivery));
    expect(tableHeaders(markdown)).toContainEqual([
      'sender',
      'notifications/s',
      'CPU ms per notification',
      'PostgreSQL CPU ms per notification',
    ]);
    expect(markdown).toContain('| the ceiling (a bare signed POST loop) | 595.7 | 0.727 | – |');
    expect(markdown).toContain('| the delivery engine | 88.3 | 4.233 | 5.213 |');
    expect(markdown).toContain(
      "The engine: 0.15× the ceiling's notifications/s (9% of the rate limit: not the bound) at 5.82× its CPU per notification.",
    );
    expect(markdown).toContain(
      "a backlog of 600 notifications drained at 20.7/s from the recovery, 0.21× the endpoint's rate limit of 100/s " +
        "(the first after 0 s, the schedule's wait; then attempts paced at 20.7/s).",
    );
    expect(markdown).toContain('in order per album, and the drain within the rate limit: yes.');
    const target = withDelivery(delivery).targets.find((t) => t.name.startsWith('Backlog drain'))!;
    expect(target).toMatchObject({
      measured: '20.7/s at a rate limit of 100/s (0.21×; attempts paced at 20.7/s), a backlog of 600; delivered in order: yes',
      met: true,
      bound: null,
    });
  });

  it('names what went wrong, and holds the target to it', () => {
    const broken = structuredClone(delivery);
    broken.drain.check = { notifications: 600, arrived: 598, outOfOrder: 3, unverified: 0, ok: false };
    broken.drain.pacePerS = 104;
    broken.drain.withinRateLimit = false;
    broken.ok = false;
    const markdown = renderMarkdown(withDelivery(broken));
    expect(markdown).toContain(
      "**no** (the drain: 2 of 600 never delivered, 3 requests before the one ahead in their album was delivered; the drain's pace above the rate limit).",
    );
    const target = withDelivery(broken).targets.find((t) => t.name.startsWith('Backlog drain'))!;
    expect(target.met).toBe(false);
    expect(target.bound).toBe("A defect: the engine sent faster than the endpoint's rate limit.");
  });

  it('says when the rate limit bounds the engine', () => {
    const bounded = structuredClone(delivery);
    bounded.throughput.engine.perS = 950;
    expect(renderMarkdown(withDelivery(bounded))).toContain('(the rate limit bounds it)');
  });
});

describe('what a receiver got of the notifications', () => {
  const sent = [
    { webhookId: 'a0', album: 'a', index: 0 },
    { webhookId: 'a1', album: 'a', index: 1 },
    { webhookId: 'b0', album: 'b', index: 0 },
  ];

  it('counts each notification delivered once, however often it came', () => {
    const arrivals = [
      { webhookId: 'b0', delivered: false },
      { webhookId: 'a0', delivered: true },
      { webhookId: 'b0', delivered: true },
      { webhookId: 'a1', delivered: true },
      { webhookId: 'a1', delivered: true },
    ];
    expect(deliveryCheck(sent, arrivals, 0)).toEqual({ notifications: 3, arrived: 3, outOfOrder: 0, unverified: 0, ok: true });
  });

  it('finds a request made before the one ahead in its album was delivered, one never delivered, one that did not verify', () => {
    const arrivals = [
      { webhookId: 'a0', delivered: false },
      { webhookId: 'a1', delivered: true },
      { webhookId: 'a0', delivered: true },
    ];
    expect(deliveryCheck(sent, arrivals, 1)).toEqual({ notifications: 3, arrived: 2, outOfOrder: 1, unverified: 1, ok: false });
  });
});

describe('the targets of a run', () => {
  const targets = evaluateTargets(fullRun, 5000);
  const target = (name: string) => targets.find((t) => t.name.startsWith(name))!;

  it('bound a missed completion p99 by the cores the pipeline needed at its CPU per child', () => {
    expect(target('Album completion p99').met).toBe(false);
    expect(target('Album completion p99').bound).toBe(
      'At 50.9 CPU-ms per child, 141.4 children/s need 7.2 cores; the machine has 2, others taking 0.18: ' +
        'children wait for CPU in the outbox and the workflow task queue.',
    );
    expect(target('Completion p99 (total known): the knee').measured).toBe(
      'none from 100/s up (100/s offered: p99 23.8 s at 94.8 children/s)',
    );
    expect(target('Completion p99 (total known): the knee').bound).toMatch(/^At 60\.1 CPU-ms per child, 94\.8 children\/s need 5\.7 cores/);
  });

  it('bound missed CPU per child by where it went, process by process, and the workflow tasks per album', () => {
    expect(target('CPU ms per new child').bound).toBe(
      'Per child, the worker 28.9, the Temporal server 21.9, PostgreSQL 5.6, the ingress 3.8 ms; an album takes 3.56 workflow tasks ' +
        'and 24.17 history events whatever its size, and the worker and the server pay per task and per event.',
    );
  });

  it('bound a missed ingest p99 by the ingress alone at the same step', () => {
    expect(target('Ingest p99 ack').measured).toBe('9.85× at 200 req/s (171.4 vs 17.4 ms)');
    expect(target('Ingest p99 ack').bound).toMatch(/the ingress alone's p99 at that step was 1\.01× the ceiling's\.$/);
  });

  it('give a met target no bound, and a missed one its own', () => {
    for (const t of targets.filter((t) => t.met !== false)) expect(t.bound).toBeNull();
    const slower = structuredClone(fullRun);
    const closedLoop = slower.ingest.find((step) => step.rate === null)!;
    closedLoop.ingressAlone!.throughputRatio = 1.43;
    const groupCommit = evaluateTargets(slower, 5000).find((t) => t.name.startsWith('Group commit'))!;
    expect(groupCommit.met).toBe(false);
    expect(groupCommit.bound).toMatch(/^Its batch cycle, not CPU \(the machine was busy 1\.58 of its 2 cores\): a request waits/);
  });

  it('say a miss on a saturated machine may be the machine', () => {
    const busy = structuredClone(fullRun);
    busy.ingest.find((step) => step.rate === null)!.ingressAlone!.throughputRatio = 1.43;
    Object.assign(
      busy.cpu.find((p) => p.phase === 'ingest closed loop, ingress alone')!,
      { machineBusyCores: 1.97, otherCores: 1.1 },
    );
    const sustained = busy.cpu.find((p) => p.phase === `${busy.sustainedPhase}, app`)!;
    sustained.otherCores = 1.9;
    sustained.cpuS = Object.fromEntries(Object.entries(sustained.cpuS).map(([name, s]) => [name, s / 20]));
    const targets = evaluateTargets(busy, 5000);
    expect(targets.find((t) => t.name.startsWith('Group commit'))!.bound).toBe(
      'CPU: the machine was busy 1.97 of its 2 cores through the step (others 1.1).',
    );
    expect(targets.find((t) => t.name.startsWith('Album completion p99'))!.bound).toBe(
      'At 2.5 CPU-ms per child, 141.4 children/s need 0.4 cores; the machine has 2, others taking 1.9: ' +
        'children wait for CPU in the outbox and the workflow task queue.',
    );
  });

  it('call a p99 that held at too low a rate what it is', () => {
    const held = structuredClone(fullRun);
    held.endToEnd.find((e) => e.phase === held.sustainedPhase)!.withTotal.ms.p99 = 180;
    const completion = evaluateTargets(held, 5000).find((t) => t.name.startsWith('Album completion p99'))!;
    expect(completion.measured).toBe('180 ms at 141.4 children/s (259 albums)');
    expect(completion.met).toBe(false);
    expect(completion.bound).toBe("The offered rate brought 141.4 new children/s, under the target's.");
  });
});

describe('a duration', () => {
  it('is in milliseconds under a second and in seconds above', () => {
    expect([duration(null), duration(65.84), duration(999.9), duration(1000), duration(75369.3)]).toEqual([
      '–',
      '65.8 ms',
      '999.9 ms',
      '1 s',
      '75.4 s',
    ]);
  });
});

describe('BENCHMARKS.md', () => {
  const file = fs.readFileSync(new URL('../../BENCHMARKS.md', import.meta.url), 'utf8');
  const prose = file.split(/^(?=## Run of )/m)[0]!;

  it('reads in minutes: under 165 lines, one table of targets', () => {
    expect(file.split('\n').length).toBeLessThan(165);
    expect(tableHeaders(file).filter((header) => header.includes('target'))).toHaveLength(1);
  });

  it('names no commit in its prose (history is in git)', () => {
    expect(prose.match(commitId)).toBeNull();
  });
});
