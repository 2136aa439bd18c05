import { describe, expect, it } from 'vitest';
import { AttemptsEnd, countPodFault, type ProxyListener } from '../../../src/pick/attempts-end.js';
import { PodFault } from '../../../src/upstream/upstream-errors.js';
import type { Scheduler } from '../../../src/pick/scheduler.js';
import type { EndpointState } from '../../../src/upstream/endpoint-registry.js';

/** Records what the listener heard. */
function recorder(): ProxyListener & { heard: string[] } {
  const heard: string[] = [];
  return { heard, proxied: (u) => heard.push(`proxied ${JSON.stringify(u)}`), proxyFailed: (e) => heard.push(`failed ${(e as Error).message}`) };
}

class Attempts extends AttemptsEnd {
  succeed(): void { this.succeeded(null); }
  fail(message: string): void { this.failed(new Error(message)); }
  crash(message: string): void { this.caught(new Error(message)); }
  protected afterInterval(): void {}
}

describe('the end of a request\'s attempts', () => {
  it('is heard once: what comes after the first end is dropped', () => {
    const l = recorder();
    const a = new Attempts(l);
    a.succeed();
    a.fail('late');
    a.succeed();
    expect(l.heard).toEqual(['proxied null']);
    const l2 = recorder();
    const b = new Attempts(l2);
    b.fail('no pod');
    b.succeed();
    expect(l2.heard).toEqual(['failed no pod']);
  });

  it('an error of the attempts\' own steps ends the request with it; after the end it goes on up', () => {
    const l = recorder();
    const a = new Attempts(l);
    a.crash('a bug');
    expect(l.heard).toEqual(['failed a bug']);
    expect(() => a.crash('the listener threw')).toThrow('the listener threw');
    expect(l.heard).toHaveLength(1);
  });
});

describe('countPodFault', () => {
  const pod = { name: 'pod-a' } as EndpointState;
  const scheduler = (): Scheduler & { calls: string[] } => {
    const calls: string[] = [];
    return { calls, timedOut: (e: EndpointState) => calls.push(`timedOut ${e.name}`), lost: (e: EndpointState) => calls.push(`lost ${e.name}`) } as unknown as Scheduler & { calls: string[] };
  };
  const withCode = (code: string): Error => Object.assign(new Error(code), { code });

  it('a timeout counts as the pod timing out', () => {
    const s = scheduler();
    expect(countPodFault(s, pod, withCode('HTTP1_HEADERS_TIMEOUT'))).toBe(PodFault.Timeout);
    expect(s.calls).toEqual(['timedOut pod-a']);
  });

  it('a connection that broke while the pod had the request counts as lost', () => {
    const s = scheduler();
    expect(countPodFault(s, pod, withCode('ECONNRESET'))).toBe(PodFault.Lost);
    expect(s.calls).toEqual(['lost pod-a']);
  });

  it('an exchange the router cut itself, or a pod never reached, counts nothing', () => {
    const s = scheduler();
    expect(countPodFault(s, pod, withCode('HTTP1_ABORTED'))).toBe(PodFault.None);
    expect(countPodFault(s, pod, withCode('ECONNREFUSED'))).toBe(PodFault.None);
    expect(s.calls).toEqual([]);
  });
});
