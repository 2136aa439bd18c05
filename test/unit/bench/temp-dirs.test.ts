/**
 * The process harness the benches start their targets through (test/helpers/processes.ts): its
 * stopAll(), which ends a bench, also removes the directories its tempDir() made (routers' files
 * and access logs), which a full run used to leave in /tmp.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stopAll, tempDir } from '../../helpers/processes.js';

describe('the bench harness cleans up after itself', () => {
  it('stopAll() removes every directory tempDir() made, with what is in it', async () => {
    const a = tempDir('ir-bench-cleanup-');
    const b = tempDir('ir-bench-cleanup-');
    mkdirSync(join(a, 'logs'));
    writeFileSync(join(a, 'logs', 'access.log'), 'x'.repeat(1000));
    writeFileSync(join(b, 'resources.yaml'), 'kind: List\nitems: []\n');
    await stopAll();
    expect(existsSync(a)).toBe(false);
    expect(existsSync(b)).toBe(false);
    const later = tempDir('ir-bench-cleanup-');
    expect(existsSync(later)).toBe(true);
    await stopAll();
    expect(existsSync(later)).toBe(false);
  });
});
