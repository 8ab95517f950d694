import { defineConfig } from 'vitest/config';

// `npm run test:cluster`: albumflow against the real Temporal server (PostgreSQL persistence and
// visibility) of `npm run temporal:cluster`. The cluster project runs the cluster's own tests and the
// album-workflow and replay integration tests against one server (test/cluster/global.ts starts it before
// the integration setup, which then uses it); the faults project runs the fault suite with the real
// server under its stack (FAULTS_TEMPORAL=cluster), its state in the stack's PostgreSQL.
export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts', 'test/integration/album-workflow.test.ts', 'test/integration/replay.test.ts'],
          globalSetup: ['test/cluster/global.ts', 'test/setup/global.ts'],
          setupFiles: ['test/setup/temporal-runtime.ts', 'test/setup/s3-environment.ts'],
          testTimeout: 90_000,
          hookTimeout: 120_000,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: ['test/faults/fault-suite.test.ts'],
          env: { FAULTS_TEMPORAL: 'cluster' },
          fileParallelism: false,
          testTimeout: 900_000,
          hookTimeout: 300_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
