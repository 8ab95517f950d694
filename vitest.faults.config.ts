import { defineConfig } from 'vitest/config';

// `npm run test:faults`: the fault and scale suites run albumflow as child processes against their own
// PostgreSQL cluster and Temporal dev server, one file at a time (they load the machine on purpose).
export default defineConfig({
  test: {
    name: 'faults',
    include: ['test/faults/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
