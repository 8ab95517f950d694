import { describe, expect, it } from 'vitest';
import { compareCounts, renderComparison, type CountsSide } from '../../bench/compare-counts.js';
import { noCounts, type PhaseCounts } from '../../bench/temporal-counts.js';

/** A sustained phase's counts with these per-album workflow tasks and per-photo billable actions. */
function counts(workflowTasks: number, actionsPerPhoto: number): PhaseCounts {
  const perAlbum = { ...noCounts, workflowTasks, historyEvents: 27, billableActions: 8 };
  return {
    phase: 'sustained 50/s',
    albums: 96,
    photos: 514,
    runs: 96,
    total: noCounts,
    perAlbum,
    perPhoto: { ...noCounts, billableActions: actionsPerPhoto },
  };
}

const side = (label: string, rounds: PhaseCounts[]): CountsSide => ({
  label,
  version: label === 'a6b46a2' ? 'a6b46a2' : 'a6c444c',
  rounds,
});
const args = ['--sustained-rate', '50', '--sustained-seconds', '10'];

describe('the counts of a revision against this checkout', () => {
  it('holds a rise within the noise (the largest difference between two rounds of one side) to no rise', () => {
    const comparison = compareCounts(
      'T',
      args,
      side('a6b46a2', [counts(4, 1.48), counts(4.04, 1.49)]),
      side('this checkout', [counts(4.05, 1.48), counts(4.03, 1.48)]),
    );
    expect(comparison.figures.find((f) => f.label === 'workflow tasks per album')).toEqual({
      label: 'workflow tasks per album',
      before: [4, 4.04],
      after: [4.05, 4.03],
      difference: 0.02,
      noise: 0.04,
    });
    expect(comparison.rose).toEqual([]);
    const markdown = renderComparison(comparison);
    expect(markdown).toContain(
      '| figure | a6b46a2 (a6b46a2; 96 albums, 514 photos / 96 albums, 514 photos) | this checkout (a6c444c; 96 albums, 514 photos / 96 albums, 514 photos) | difference of the means | noise |',
    );
    expect(markdown).toContain('| workflow tasks per album | 4, 4.04 | 4.05, 4.03 | +0.02 | 0.04 |');
    expect(markdown).toContain('No rise beyond the noise in workflow tasks per album or billable actions per photo.');
  });

  it('names a held figure that rose by more than the noise', () => {
    const comparison = compareCounts(
      'T',
      args,
      side('a6b46a2', [counts(4, 1.48), counts(4.01, 1.48)]),
      side('this checkout', [counts(4.5, 1.6), counts(4.52, 1.61)]),
    );
    expect(comparison.rose).toEqual(['workflow tasks per album', 'billable actions per photo']);
    expect(renderComparison(comparison)).toContain(
      '**Rose** beyond the noise: workflow tasks per album +0.505 (noise 0.02), billable actions per photo +0.125 (noise 0.01).',
    );
  });
});
