import { runner } from 'node-pg-migrate';
import type pg from 'pg';
import { migrationsDir } from '../common/paths.js';

export interface MigrationLog {
  info(message: string): void;
}

/**
 * Applies pending migrations under node-pg-migrate's advisory lock, waiting for it, so processes
 * that start together apply each migration once. Returns the names of the migrations applied.
 */
export async function migrate(config: pg.ClientConfig, log?: MigrationLog): Promise<string[]> {
  const applied = await runner({
    databaseUrl: config,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    advisoryLockMode: 'wait',
    checkOrder: true,
    singleTransaction: true,
    log: () => undefined,
  });
  const names = applied.map((m) => m.name);
  if (names.length > 0) log?.info(`applied migrations: ${names.join(', ')}`);
  return names;
}
