/**
 * A setup file (test/vitest.config.ts): after each test file, the directories it made with
 * tempDir() (routers' resources and access logs, auth files) are removed, so a run of the suite
 * leaves none of its ~370 in /tmp. Registered before the file's own hooks, this afterAll runs after
 * them (vitest runs after-hooks in reverse order): a file that stops its router and reads the
 * router's files in its afterAll still has them.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './processes.js';

afterAll(() => {
  removeTempDirs();
});
