import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url).pathname;
const script = readFileSync(`${root}test/on-node24.sh`, 'utf8');

describe('test/on-node24.sh, the second pass of npm test on Node 24', () => {
  it('runs after the whole suite in npm test', () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.test).toMatch(/vitest run --config test\/vitest\.config\.ts && bash test\/on-node24\.sh$/);
  });

  it('names end-to-end files that exist (a renamed one would drop out of the pass unseen)', () => {
    const list = /^E2E=\(\n([\s\S]*?)\n\)$/m.exec(script)?.[1] ?? '';
    const files = list.split(/\s+/).filter(Boolean);
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) {
      expect(f).toMatch(/^test\/e2e\/[a-z0-9-]+\.test\.ts$/);
      expect(existsSync(`${root}${f}`), f).toBe(true);
    }
    expect(script).toContain('vitest.mjs run --config test/vitest.config.ts test/unit "${E2E[@]}"');
  });
});
