import { describe, expect, it } from 'vitest';
import { postgresActivity, walBytesBetween, type PostgresCounters } from '../../bench/postgres-activity.js';
import { postgresPerChild } from '../../bench/report.js';

const rows = (inserted: number, updated: number, deleted: number) => ({ inserted, updated, deleted });

describe('postgresActivity', () => {
  it('reads WAL positions across a segment boundary', () => {
    expect(walBytesBetween('0/FFFFFF00', '1/100')).toBe(0x200);
    expect(walBytesBetween('16/B374D848', '16/B374D848')).toBe(0);
  });

  it('totals the databases that committed, a database created in the phase from zero', () => {
    const before: PostgresCounters = {
      walLsn: '0/1000',
      databases: { app: { commits: 10, rowsWritten: rows(5, 3, 1) }, ceiling: { commits: 4, rowsWritten: rows(2, 0, 0) } },
    };
    const after: PostgresCounters = {
      walLsn: '0/3000',
      databases: {
        app: { commits: 30, rowsWritten: rows(45, 13, 2) },
        ceiling: { commits: 4, rowsWritten: rows(2, 0, 0) },
        baseline: { commits: 5, rowsWritten: rows(7, 1, 0) },
      },
    };
    expect(postgresActivity(before, after)).toEqual({
      commits: 25,
      rowsWritten: rows(47, 11, 1),
      walBytes: 0x2000,
      databases: { app: { commits: 20, rowsWritten: rows(40, 10, 1) }, baseline: { commits: 5, rowsWritten: rows(7, 1, 0) } },
    });
  });

  it('per child: commits, rows written and WAL KB', () => {
    const activity = { commits: 50, rowsWritten: rows(100, 40, 10), walBytes: 512_000, databases: {} };
    expect(postgresPerChild(activity, 20)).toEqual({ commits: 2.5, rowsWritten: 7.5, walKB: 25 });
    expect(postgresPerChild(activity, 0)).toBeNull();
    expect(postgresPerChild(undefined, 20)).toBeNull();
  });
});
