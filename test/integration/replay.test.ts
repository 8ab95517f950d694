import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflows } from '../../src/temporal/worker.js';
import { loadHistories, type SavedHistory } from '../harness/albums.js';

// Histories of real runs (regenerate with `UPDATE_HISTORIES=1 npx vitest run test/integration/album-workflow test/integration/telegram`).
// Once a version is deployed, a workflow change that cannot replay one of them ships behind `patched()`
// (docs/reliability.md, "Changing workflow code").
describe('replaying saved workflow histories with the current workflow code', () => {
  const histories = loadHistories();

  it('has histories of every kind of run to replay', () => {
    expect(histories.map((h) => h.name)).toEqual(
      expect.arrayContaining([
        'album-continue-as-new',
        'album-duplicates-out-of-order',
        'album-late-after-close',
        'album-late-item',
        'album-quiet-period',
        'album-review',
        'album-telegram-edit-after-close',
        'album-telegram-edited',
        'album-worker-restart',
        'message-standalone',
      ]),
    );
  });

  const replay = async (saved: SavedHistory, options: Omit<ReplayWorkerOptions, 'replayName'>) => {
    const results = [];
    for await (const result of Worker.runReplayHistories({ ...options, replayName: saved.name }, [
      { workflowId: saved.workflowId, history: saved.history },
    ])) {
      results.push(result);
    }
    expect(results).toHaveLength(1);
    expect(results[0]?.error).toBeUndefined();
  };

  it.each(histories.map((h) => [h.name, h] as const))('replays %s without nondeterminism', async (_name, saved) => {
    await replay(saved, { workflowBundle: { codePath: inject('workflowBundlePath') } });
  });

  // A worker with tracing on bundles the OpenTelemetry workflow interceptors: they add no command, so the
  // histories of untraced runs replay under them too (and a replay exports no span).
  describe('with the tracing interceptors', () => {
    let code: string;
    const spans = new InMemorySpanExporter();
    beforeAll(async () => {
      code = (await bundleWorkflows({ traced: true })).code;
    }, 120_000);

    it.each(histories.map((h) => [h.name, h] as const))('replays %s without nondeterminism', async (_name, saved) => {
      await replay(saved, {
        workflowBundle: { code },
        sinks: { exporter: makeWorkflowExporter(new SimpleSpanProcessor(spans), new Resource({})) },
      });
      expect(spans.getFinishedSpans()).toEqual([]);
    });
  });
});
