// What a `perf report` of the Temporal server says, in the terms BENCHMARKS.md reasons in: how much of the
// server's CPU each request kind and background queue took (time under its handler, callees included), and
// which code the samples landed in (self time by area). Pure: it reads the text `perf report --stdio
// --children --sort sym -g none` prints, a line per symbol with its time callees included and its self time.

export interface PerfShare {
  name: string;
  /** Percent of the process's samples. */
  percent: number;
}

export interface PerfSummary {
  /** The CPU time the samples stand for (the cpu-clock event counts nanoseconds), in seconds. */
  cpuSeconds: number;
  /** Time under each gRPC handler (service.Method), each history queue executor, and the garbage collector's workers. */
  under: PerfShare[];
  /** Time in work that every kind of request does (callees included; these overlap the `under` shares). */
  within: PerfShare[];
  /** Self time by area of code, summing to 100 (give or take rounding). */
  areas: PerfShare[];
}

interface Line {
  /** Percent of the samples under the symbol, callees included. */
  children: number;
  /** Percent of the samples in the symbol itself. */
  self: number;
  kernel: boolean;
  symbol: string;
}

/** The symbol lines of the report: `  45.67%  1.23%  [.] sym`. */
function parseLines(report: string): Line[] {
  const lines: Line[] = [];
  for (const text of report.split('\n')) {
    const match = /^\s*([\d.]+)%\s+([\d.]+)%\s+\[(.)\]\s+(.+?)\s*$/.exec(text);
    if (match) lines.push({ children: Number(match[1]), self: Number(match[2]), kernel: match[3] === 'k', symbol: match[4]! });
  }
  return lines;
}

const areaRules: Array<[string, (line: Line) => boolean]> = [
  ['the kernel (system calls, network, page faults)', (line) => line.kernel],
  ["SQLite (the dev server's persistence and visibility, modernc.org)", (line) => line.symbol.startsWith('modernc.org/')],
  ['protobuf', (line) => /^(google\.golang\.org\/protobuf|github\.com\/gogo\/protobuf)\//.test(line.symbol)],
  ['gRPC and HTTP/2', (line) => /^(google\.golang\.org\/grpc|golang\.org\/x\/net\/http2)/.test(line.symbol)],
  ['Temporal server code', (line) => line.symbol.startsWith('go.temporal.io/')],
  ['metrics (tally, the Prometheus client)', (line) => /^github\.com\/(uber-go\/tally|prometheus)\//.test(line.symbol)],
  [
    'Go runtime (allocation, GC, scheduling, maps)',
    (line) => /^(runtime\.|internal\/runtime\/|runtime\/internal\/|gcWriteBarrier|memeqbody|aeshashbody|indexbytebody)/.test(line.symbol),
  ],
];

/** `go.temporal.io/server/api/historyservice/v1._HistoryService_RecordWorkflowTaskStarted_Handler` → `HistoryService.RecordWorkflowTaskStarted`. */
function entryName(symbol: string): string | null {
  const handler = /\._(\w+Service)_(\w+)_Handler$/.exec(symbol);
  if (handler) return `${handler[1]}.${handler[2]}`;
  const queue = /\.\(\*(\w+QueueActiveTaskExecutor|visibilityQueueTaskExecutor|\w+QueueStandbyTaskExecutor)\)\.Execute$/.exec(symbol);
  if (queue) return queue[1]!;
  if (symbol === 'runtime.gcBgMarkWorker') return 'garbage collection (background mark workers)';
  return null;
}

/** Work every request kind does, by the symbol all of it passes through. */
const crossCutting: Array<[string, string]> = [
  ['database/sql.withLock', 'the SQL driver (database/sql: every statement, row and commit of persistence and visibility)'],
  ['modernc.org/sqlite/lib._sqlite3RunParser', "SQLite compiling SQL text (the dev server's driver prepares every statement anew)"],
  ['runtime.mallocgc', 'memory allocation (runtime.mallocgc)'],
];

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export function summarizePerfReport(report: string): PerfSummary {
  const nanoseconds = Number(/^# Event count \(approx\.\): (\d+)/m.exec(report)?.[1] ?? 0);
  const under = new Map<string, number>();
  const within = new Map<string, number>();
  const areas = new Map<string, number>();
  for (const line of parseLines(report)) {
    const label = crossCutting.find(([symbol]) => symbol === line.symbol)?.[1];
    if (label !== undefined) within.set(label, line.children);
    const name = entryName(line.symbol);
    // A handler's symbol appears once; keep the largest if a name repeats (a wrapper of the same method).
    if (name !== null) under.set(name, Math.max(under.get(name) ?? 0, line.children));
    const area = areaRules.find(([, matches]) => matches(line))?.[0] ?? 'other (Go libraries, the standard library)';
    areas.set(area, (areas.get(area) ?? 0) + line.self);
  }
  // Each symbol's share is printed rounded to 0.01%, and a symbol of one sample in ten thousand rounds up: the
  // printed shares of a long report add up to a few percent over 100, so each area is scaled to their sum.
  const listed = [...areas.values()].reduce((sum, value) => sum + value, 0);
  for (const [area, percent] of areas) areas.set(area, listed > 0 ? (percent / listed) * 100 : 0);
  const sorted = (map: Map<string, number>) =>
    [...map.entries()].map(([name, percent]) => ({ name, percent: round(percent) })).sort((a, b) => b.percent - a.percent);
  return { cpuSeconds: round(nanoseconds / 1e9), under: sorted(under), within: sorted(within), areas: sorted(areas) };
}

/** One line for the run's log: the largest shares of each kind. */
export function describePerfSummary(summary: PerfSummary): string {
  const shares = (list: PerfShare[]) =>
    list
      .slice(0, 6)
      .map(({ name, percent }) => `${name} ${percent}%`)
      .join(', ');
  return `under ${shares(summary.under)}; in ${shares(summary.within)}; self time in ${shares(summary.areas)}`;
}
