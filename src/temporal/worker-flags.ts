// Kept apart from worker.ts so that launchers (the bench, the fault suite) read it without loading the SDK.

/**
 * Node flags every launcher of the worker entry point uses (`npm run start:worker`, docker-compose.yml, the
 * bench, the fault suite). V8 grows a heap long before it must collect it, and the SDK's workflow thread,
 * which runs every album the worker has ever replayed, inherits these flags: without a bound the worker sat
 * at 480–590 MB with 5,000 open albums, with 256 MB of old space at 390 MB (360 MB with the default sticky
 * cache of 150 albums). 256 MB holds that cache and one album of 10,000 children (the fault suite's scale test).
 */
export const workerNodeFlags = ['--max-old-space-size=256'] as const;
