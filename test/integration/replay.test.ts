import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { loadHistories } from '../harness/albums.js';

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

  it.each(histories.map((h) => [h.name, h] as const))('replays %s without nondeterminism', async (_name, saved) => {
    const results = [];
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: saved.name },
      [{ workflowId: saved.workflowId, history: saved.history }],
    )) {
      results.push(result);
    }
    expect(results).toHaveLength(1);
    expect(results[0]?.error).toBeUndefined();
  });
});
