import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e files start real processes; keep parallelism modest on small machines.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
