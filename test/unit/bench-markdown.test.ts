import { describe, expect, it } from 'vitest';
import { benchmarksHeader, withRunSection } from '../../bench/markdown.js';

const run = (at: string) => `## Run of ${at}\n\n- Machine: test\n\n### Targets\n\n| figure | met |\n|---|---|\n| one | yes |\n`;

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
