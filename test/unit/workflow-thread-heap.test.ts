import { once } from 'node:events';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { boundWorkflowThreadHeaps, workflowThreadOldSpaceMb, workflowThreadSemiSpaceMb } from '../../src/temporal/worker.js';

const MiB = 1024 * 1024;

// A thread that allocates short-lived objects fast, as a workflow thread under backlog does, until V8 has
// grown its young generation as far as it may; it answers its heap limit and the young generation's size.
const allocatingThread = `
const v8 = require('node:v8');
const { parentPort } = require('node:worker_threads');
let kept = [];
for (let i = 0; i < 5e6; i++) {
  kept.push({ i, text: 'x' + i });
  if (kept.length > 100000) kept = [];
}
const newSpace = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
parentPort.postMessage([v8.getHeapStatistics().heap_size_limit, newSpace.space_size]);
`;

describe('the workflow threads’ heap bounds', () => {
  it('bound the old space and the young generation of the threads started after them, and leave the process’s own heap', async () => {
    const ownLimit = v8.getHeapStatistics().heap_size_limit;
    boundWorkflowThreadHeaps();
    const thread = new Worker(allocatingThread, { eval: true });
    const [[limit, youngGeneration]] = (await once(thread, 'message')) as [[number, number]];
    await thread.terminate();
    expect(limit).toBeGreaterThanOrEqual(workflowThreadOldSpaceMb * MiB);
    // The old space, and the young generation's two semi-spaces with its large-object space beside them.
    expect(limit).toBeLessThanOrEqual((workflowThreadOldSpaceMb + 3 * workflowThreadSemiSpaceMb) * MiB);
    expect(youngGeneration).toBeLessThanOrEqual(2 * workflowThreadSemiSpaceMb * MiB);
    expect(v8.getHeapStatistics().heap_size_limit).toBe(ownLimit);
  });
});
