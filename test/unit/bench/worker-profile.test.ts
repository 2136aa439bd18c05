import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { allocatedBytes, callerChains, cpuSelfTimes, frameName, Inspector } from '../../../bench/worker-profile.js';
import { summarizeProfiles } from '../../../bench/cpu-profile.js';

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
        { id: 5, callFrame: frame('atomicsWaitLoop', 'file:///r/node_modules/piscina/dist/worker.js', 3) },
      ],
      samples: [3, 2, 4, 3, 2, 99, 5],
      timeDeltas: [10, 50, 20, 30, 50, 7, 40],
    };
    const r = cpuSelfTimes(profile);
    expect(r.busy).toBe(60);
    expect(r.idle).toBe(140); // idle and a thread blocked in Atomics.wait
    expect(Object.fromEntries(r.byFunction)).toEqual({ 'a x.js:2': 40, 'b x.js:10': 20 });
  });

  it("breaks a function's self time down by the chain of its callers, nearest first", () => {
    // (root) -> a -> b -> writeBuffer, (root) -> c -> writeBuffer, (root) -> writeBuffer, and a deep chain cut at two frames.
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)'), children: [2, 5, 7, 8] },
        { id: 2, callFrame: frame('a', 'file:///r/dist/a.js', 0), children: [3] },
        { id: 3, callFrame: frame('b', 'file:///r/dist/b.js', 1), children: [4] },
        { id: 4, callFrame: frame('writeBuffer') },
        { id: 5, callFrame: frame('c', 'file:///r/dist/c.js', 2), children: [6] },
        { id: 6, callFrame: frame('writeBuffer') },
        { id: 7, callFrame: frame('writeBuffer') },
        { id: 8, callFrame: frame('d', 'file:///r/dist/d.js', 0), children: [9] },
        { id: 9, callFrame: frame('e', 'file:///r/dist/e.js', 0), children: [10] },
        { id: 10, callFrame: frame('f', 'file:///r/dist/f.js', 0), children: [11] },
        { id: 11, callFrame: frame('writeBuffer') },
      ],
      samples: [4, 6, 4, 7, 3, 11, 99],
      timeDeltas: [10, 20, 30, 5, 100, 7, 1],
    };
    expect(Object.fromEntries(callerChains(profile, 'writeBuffer'))).toEqual({ 'b b.js:2 < a a.js:1': 40, 'c c.js:3': 20, '(no caller)': 5, 'f f.js:1 < e e.js:1 < d d.js:1': 7 });
    expect(Object.fromEntries(callerChains(profile, 'writeBuffer', 2))).toEqual({ 'b b.js:2 < a a.js:1': 40, 'c c.js:3': 20, '(no caller)': 5, 'f f.js:1 < e e.js:1': 7 });
    expect(callerChains(profile, 'collect').size).toBe(0);
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

  it('summarizes .cpuprofile files the same way: self time per function and area, idle apart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-cpu-profile-'));
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(idle)') },
        { id: 2, callFrame: frame('parse', 'file:///r/dist/api/p.js', 0) },
        { id: 3, callFrame: frame('(garbage collector)') },
      ],
      samples: [1, 2, 2, 3],
      timeDeltas: [4000, 3000, 1000, 4000],
    };
    writeFileSync(join(dir, 'a.cpuprofile'), JSON.stringify(profile));
    writeFileSync(join(dir, 'b.cpuprofile'), JSON.stringify(profile));
    const s = summarizeProfiles(dir);
    expect(s.files).toBe(2);
    expect(s.busyMs).toBe(16);
    expect(s.idleMs).toBe(8);
    expect(s.topFunctions.map((f) => [f.name, f.where, f.selfMs])).toEqual([['parse', 'dist/api/p.js:1', 8], ['(garbage collector)', '', 8]]);
    expect(s.areas.map((a) => [a.area, a.selfMs])).toEqual([['router src/api', 8], ['(garbage collector)', 8]]);
  });
});

describe('Inspector', () => {
  it('rejects a call whose answer the connection dropped, and every call after, instead of waiting forever', async () => {
    const child = spawn(process.execPath, ['--inspect=127.0.0.1:0', '-e', 'setInterval(() => {}, 1000)'], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /Debugger listening on (ws:\/\/\S+)/.exec(err);
          if (m !== null) resolve(m[1]);
        });
        child.on('exit', () => reject(new Error(`the inspected process exited: ${err}`)));
      });
      const inspector = await Inspector.open(url);
      await expect(inspector.call<{ result: { value: number } }>('Runtime.evaluate', { expression: '6 * 7', returnByValue: true }))
        .resolves.toMatchObject({ result: { value: 42 } });
      const never = inspector.call('Runtime.evaluate', { expression: 'new Promise(() => {})', awaitPromise: true });
      child.kill('SIGKILL');
      await expect(never).rejects.toThrow(/^Runtime\.evaluate: the inspector connection (closed|failed).* before the answer came$/);
      await expect(inspector.call('Profiler.enable')).rejects.toThrow(/^Profiler\.enable: the inspector connection (closed|failed)/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
