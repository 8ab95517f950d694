import { describe, expect, it } from 'vitest';
import { summarizePerfReport } from '../../bench/perf-summary.js';

// Shaped as `perf report --stdio --children --sort sym -g none` prints it (the header trimmed to what is read):
// the time under each symbol (callees included), then its self time.
const report = `# Samples: 2K of event 'cpu-clock:ppp'
# Event count (approx.): 12500000000
#
# Children      Self  Symbol
# ........  ........  ......
#
    44.71%     0.00%  [.] google.golang.org/grpc.(*Server).handleStream
    26.87%     0.00%  [.] database/sql.withLock
    20.00%    20.00%  [.] modernc.org/sqlite/lib._sqlite3VdbeExec
    15.88%     0.00%  [.] go.temporal.io/server/service/history.(*visibilityQueueTaskExecutor).Execute
    15.00%    15.00%  [.] runtime.scanObject
    15.00%    15.00%  [.] encoding/json.(*decodeState).object
    12.00%    12.00%  [k] clear_page_erms
    11.39%     0.00%  [.] modernc.org/sqlite/lib._sqlite3RunParser
    10.22%     0.00%  [.] go.temporal.io/server/api/historyservice/v1._HistoryService_SignalWithStartWorkflowExecution_Handler
    10.04%     0.00%  [.] go.temporal.io/server/api/historyservice/v1._HistoryService_SignalWithStartWorkflowExecution_Handler.func1
    10.00%    10.00%  [.] modernc.org/libc.Xmemcpy
     8.03%     0.00%  [.] runtime.mallocgc
     8.00%     8.00%  [.] google.golang.org/protobuf/internal/impl.(*MessageInfo).sizePointerSlow
     7.00%     7.00%  [.] go.temporal.io/server/service/history.(*historyEngineImpl).Start
     6.00%     6.00%  [.] google.golang.org/grpc.(*Server).processUnaryRPC
     5.66%     0.00%  [.] runtime.gcBgMarkWorker
     5.66%     0.00%  [.] go.temporal.io/api/workflowservice/v1._WorkflowService_SignalWithStartWorkflowExecution_Handler
     5.00%     5.00%  [.] internal/runtime/maps.(*Map).getWithoutKeySmallFastStr
     2.92%     0.00%  [.] go.temporal.io/server/service/history.(*transferQueueActiveTaskExecutor).Execute
     2.37%     0.00%  [.] go.temporal.io/server/api/matchingservice/v1._MatchingService_PollWorkflowTaskQueue_Handler
     2.00%     2.00%  [.] github.com/uber-go/tally/v4.(*scopeRegistry).Subscope
`;

describe('summarizing a perf report of the Temporal server', () => {
  const summary = summarizePerfReport(report);

  it('reads the CPU time the samples stand for from the cpu-clock event count', () => {
    expect(summary.cpuSeconds).toBe(12.5);
  });

  it('reports the time under each request handler, queue executor and the GC workers, largest first', () => {
    expect(summary.under).toEqual([
      { name: 'visibilityQueueTaskExecutor', percent: 15.9 },
      { name: 'HistoryService.SignalWithStartWorkflowExecution', percent: 10.2 },
      { name: 'garbage collection (background mark workers)', percent: 5.7 },
      { name: 'WorkflowService.SignalWithStartWorkflowExecution', percent: 5.7 },
      { name: 'transferQueueActiveTaskExecutor', percent: 2.9 },
      { name: 'MatchingService.PollWorkflowTaskQueue', percent: 2.4 },
    ]);
  });

  it('reports the time in the SQL driver, in SQLite compiling statements and in allocation, whoever called them', () => {
    expect(summary.within).toEqual([
      { name: 'the SQL driver (database/sql: every statement, row and commit of persistence and visibility)', percent: 26.9 },
      { name: "SQLite compiling SQL text (the dev server's driver prepares every statement anew)", percent: 11.4 },
      { name: 'memory allocation (runtime.mallocgc)', percent: 8 },
    ]);
  });

  it('sorts self time into areas of code', () => {
    const areas = Object.fromEntries(summary.areas.map(({ name, percent }) => [name, percent]));
    expect(areas).toEqual({
      "SQLite (the dev server's persistence and visibility, modernc.org)": 30,
      'Go runtime (allocation, GC, scheduling, maps)': 20,
      'the kernel (system calls, network, page faults)': 12,
      'Temporal server code': 7,
      'metrics (tally, the Prometheus client)': 2,
      protobuf: 8,
      'gRPC and HTTP/2': 6,
      'other (Go libraries, the standard library)': 15,
    });
    expect(summary.areas.map(({ percent }) => percent)).toEqual([...summary.areas.map(({ percent }) => percent)].sort((a, b) => b - a));
  });

  it("scales the areas to the printed shares' sum, which rounding of many one-sample symbols takes over 100", () => {
    const rounded = `# Event count (approx.): 1000000000\n    60.00%    60.00%  [.] runtime.scanObject\n    40.00%    40.00%  [.] modernc.org/libc.Xmemcpy\n     4.00%     4.00%  [.] runtime.step\n`;
    const areas = summarizePerfReport(rounded).areas;
    expect(areas.map(({ percent }) => percent)).toEqual([61.5, 38.5]);
    expect(areas.reduce((sum, { percent }) => sum + percent, 0)).toBeCloseTo(100, 0);
  });
});
