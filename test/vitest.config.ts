import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e files start real processes and mostly wait on them (timeouts, slow clients, drains): on
    // 2 CPUs, three files at a time kept them busy (9-10% idle over a run, 25% with two) and took
    // the suite's wall from about 585 to 495-530 s; more would only queue for the CPUs.
    maxWorkers: 3,
    fileParallelism: true,
    // Test files share their worker process (one per worker, not one per file): a new process per
    // file cost about 0.5 s of CPU each, 319 times. So a test restores what it changes of the
    // process (spies, timers, env, listeners); after each file, process-state.ts checks the
    // environment, the working directory, fake timers and the signal and error listeners.
    isolate: false,
    // After each file: the directories its tempDir() calls made are removed (temp-dirs-cleanup.ts).
    setupFiles: ['test/helpers/process-state.ts', 'test/helpers/temp-dirs-cleanup.ts'],
  },
});
