import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // The property tests run hundreds of cases each: on a shared, loaded machine one can take longer than
          // vitest's default 5 s, which would fail it for the machine's speed rather than for a property.
          testTimeout: 60_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/setup/global.ts'],
          setupFiles: ['test/setup/temporal-runtime.ts', 'test/setup/s3-environment.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
