import { describe, expect, it } from 'vitest';
import { CrashGuard } from '../../../src/primary/crash-guard.js';

describe('CrashGuard', () => {
  it('allows restarts until more than maxDeaths happen within the window', () => {
    let now = 0;
    const g = new CrashGuard(3, 10_000, () => now);
    expect([g.allowRestart(), g.allowRestart(), g.allowRestart()]).toEqual([true, true, true]);
    expect(g.allowRestart()).toBe(false);
  });

  it('forgets deaths older than the window', () => {
    let now = 0;
    const g = new CrashGuard(2, 10_000, () => now);
    g.allowRestart();
    g.allowRestart();
    now = 10_001;
    expect(g.allowRestart()).toBe(true);
  });
});
