import { defineConfig } from 'vitest/config';

// `npm run test:browser`: the console in headless Chromium against the real stack (the test
// PostgreSQL database and Temporal dev server of test/setup/global.ts).
export default defineConfig({
  test: {
    name: 'browser',
    include: ['test/browser/**/*.test.ts'],
    pool: 'forks',
    globalSetup: ['test/setup/global.ts'],
    setupFiles: ['test/setup/temporal-runtime.ts', 'test/setup/s3-environment.ts'],
    testTimeout: 90_000,
    hookTimeout: 120_000,
    maxWorkers: 1,
  },
});
