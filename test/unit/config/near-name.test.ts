import { describe, expect, it } from 'vitest';
import { nearName } from '../../../src/config/near-name.js';

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
});
