import { expect, it } from 'vitest';
import { startRouter } from '../helpers/processes.js';

// The tests' own router starter: a router that exits at start fails the test at once, with its
// output, not after the readiness timeout.
it('a router that exits at start is reported at once, with its output', async () => {
  const t = Date.now();
  await expect(startRouter('not: yaml: [', { workers: 1 })).rejects.toThrow(/router exited 2: [\s\S]*yaml/i);
  expect(Date.now() - t).toBeLessThan(20_000); // the readiness timeout is 60 s
});
