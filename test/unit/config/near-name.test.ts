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

  it('gives none when nothing is close, when two are equally close, or for the name itself', () => {
    expect(nearName('Service', kinds)).toBeNull();
    expect(nearName('Deployment', kinds)).toBeNull();
    expect(nearName('ab', ['ax', 'ay'])).toBeNull();
    expect(nearName('ModelServer', kinds)).toBeNull();
  });
});
