import { describe, expect, it } from 'vitest';
import { allocatedBytes, cpuSelfTimes, frameName } from '../../../bench/worker-profile.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

describe('worker-profile summaries', () => {
  it('names frames by function and short path, with 1-based lines', () => {
    expect(frameName(frame('parseHead', 'file:///work/main/dist/upstream/http1/response-parser.js', 159))).toBe('parseHead upstream/http1/response-parser.js:160');
    expect(frameName(frame('count', 'file:///x/node_modules/gpt-tokenizer/esm/a.js', 0))).toBe('count gpt-tokenizer/esm/a.js:1');
    expect(frameName(frame('', 'node:buffer', 661))).toBe('(anonymous) node:buffer:662');
    expect(frameName(frame('writeBuffer'))).toBe('writeBuffer');
  });

  it('sums CPU self time per function, idle apart', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)') },
        { id: 2, callFrame: frame('(idle)') },
        { id: 3, callFrame: frame('a', 'file:///r/dist/x.js', 1) },
        { id: 4, callFrame: frame('b', 'file:///r/dist/x.js', 9) },
      ],
      samples: [3, 2, 4, 3, 2, 99],
      timeDeltas: [10, 50, 20, 30, 50, 7],
    };
    const r = cpuSelfTimes(profile);
    expect(r.busy).toBe(60);
    expect(r.idle).toBe(100);
    expect(Object.fromEntries(r.byFunction)).toEqual({ 'a x.js:2': 40, 'b x.js:10': 20 });
  });

  it('sums allocated bytes per function over the whole tree', () => {
    const head = {
      callFrame: frame('(root)'), selfSize: 0, children: [
        { callFrame: frame('f', 'file:///r/dist/f.js', 0), selfSize: 512, children: [
          { callFrame: frame('g', 'file:///r/dist/g.js', 4), selfSize: 256, children: [] },
        ] },
        { callFrame: frame('g', 'file:///r/dist/g.js', 4), selfSize: 1024, children: [] },
      ],
    };
    const r = allocatedBytes(head);
    expect(r.total).toBe(1792);
    expect(Object.fromEntries(r.byFunction)).toEqual({ 'f f.js:1': 512, 'g g.js:5': 1280 });
  });
});
