import { describe, expect, it } from 'vitest';
import { editDistance, NEAR_NAMES_COMPARED, NearNames, nearName } from '../../../src/config/near-name.js';

describe('nearName', () => {
  const kinds = ['ModelRoute', 'ModelServer'];

  it('finds the name within two edits, or equal ignoring case', () => {
    expect(nearName('ModelSrver', kinds)).toBe('ModelServer');
    expect(nearName('modelserver', kinds)).toBe('ModelServer');
    expect(nearName('ModelRoutes', kinds)).toBe('ModelRoute');
    expect(nearName('trafficPolcy', ['model', 'trafficPolicy', 'endpoints'])).toBe('trafficPolicy');
  });

  it('counts two neighbours swapped as one edit', () => {
    expect(nearName('--prot', ['--port', '--host'])).toBe('--port');
    expect(nearName('ModelSevrer', kinds)).toBe('ModelServer');
    // Two swaps, the second at the end: two edits (each letter changed would be four).
    expect(nearName('badc', ['abcd', 'wxyz'])).toBe('abcd');
    expect(nearName('bacdfe', ['abcdef'])).toBe('abcdef');
    expect(nearName('badcfe', ['abcdef'])).toBeNull();
  });

  it('gives none when nothing is close, when two are equally close, or for the name itself', () => {
    expect(nearName('Service', kinds)).toBeNull();
    expect(nearName('Deployment', kinds)).toBeNull();
    expect(nearName('ab', ['ax', 'ay'])).toBeNull();
    expect(nearName('ModelServer', kinds)).toBeNull();
  });

  it("the banded distance equals the whole table's, capped, on random near strings of every length pair and cap", () => {
    // The whole table, as nearName computed it before the band (optimal string alignment).
    const reference = (a: string, b: string, cap: number): number => {
      const d: number[][] = [];
      for (let i = 0; i <= a.length; i++) {
        d.push([i]);
        for (let j = 1; j <= b.length; j++) {
          if (i === 0) { d[i].push(j); continue; }
          let v = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
          if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2][j - 2] + 1);
          d[i].push(v);
        }
      }
      return Math.min(d[a.length][b.length], cap);
    };
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const word = (len: number): string => Array.from({ length: len }, () => 'abc'[random(3)]).join('');
    const edit = (w: string): string => {
      const at = random(w.length + 1);
      switch (random(4)) {
        case 0: return w.slice(0, at) + 'abc'[random(3)] + w.slice(at);
        case 1: return w.slice(0, at) + w.slice(at + 1);
        case 2: return w.slice(0, at) + 'abc'[random(3)] + w.slice(at + 1);
        default: return at + 1 < w.length ? w.slice(0, at) + w[at + 1] + w[at] + w.slice(at + 2) : w;
      }
    };
    let near = 0;
    for (let k = 0; k < 20000; k++) {
      const a = word(random(12));
      let b = random(3) === 0 ? word(random(12)) : a;
      for (let e = random(4); e > 0; e--) b = edit(b);
      const cap = 1 + random(5);
      const want = reference(a, b, cap);
      if (want < cap) near++;
      expect(editDistance(a, b, cap), `${a} ${b} ${cap}`).toBe(want);
    }
    // Most pairs are within the cap: the band, not only the early exits, is what was checked.
    expect(near).toBeGreaterThan(8000);
  });

  it('a long name against many served ones: found, and ties still give none', () => {
    const served = Array.from({ length: 200 }, (_, i) => `org-model-${i}-instruct-v2`);
    expect(nearName('org-model-17-instrct-v2', served)).toBe('org-model-17-instruct-v2');
    expect(nearName('org-model-1-instruct-v', served)).toBe('org-model-1-instruct-v2');
    expect(nearName('org-model-1x-instruct-v2', served)).toBeNull(); // one edit from ten of them
    expect(nearName('ORG-MODEL-150-INSTRUCT-V2', served)).toBe('org-model-150-instruct-v2');
    expect(nearName(`x${'a'.repeat(300)}`, [...served, 'a'.repeat(300)])).toBe('a'.repeat(300));
  });
});

describe('NearNames (the served model names of a route table)', () => {
  it('up to NEAR_NAMES_COMPARED names: what nearName finds', () => {
    const served = Array.from({ length: NEAR_NAMES_COMPARED }, (_, i) => `org-model-${i}-instruct-v2`);
    const names = new NearNames(served);
    for (const word of ['org-model-17-instrct-v2', 'org-model-1x-instruct-v2', 'ORG-MODEL-150-INSTRUCT-V2', 'org-model-17-instruct-v2', 'zzz']) {
      expect(names.near(word), word).toBe(nearName(word, served));
    }
    expect(names.near('org-model-17-instrct-v2')).toBe('org-model-17-instruct-v2');
  });

  it('with more, only a name equal but for case (each unknown name would cost a comparison with every one); none when several share it', () => {
    const served = Array.from({ length: NEAR_NAMES_COMPARED + 1 }, (_, i) => `org-model-${i}-instruct-v2`);
    const names = new NearNames([...served, 'Twin', 'TWIN']);
    expect(names.near('ORG-MODEL-150-INSTRUCT-V2')).toBe('org-model-150-instruct-v2');
    expect(names.near('org-model-17-instrct-v2')).toBeNull();
    expect(names.near('org-model-17-instruct-v2')).toBeNull(); // itself: nothing to suggest
    expect(names.near('twin')).toBeNull();
  });
});
