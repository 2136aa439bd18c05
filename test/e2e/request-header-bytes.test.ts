import { describe, expect, it } from 'vitest';
import { resourcesFor, startRouter } from '../helpers/processes.js';
import { rawRequest, startHeadRecordingPod, wholeAnswer } from '../helpers/recording-pod.js';

/**
 * Request header values upstream: the server hands each value over as text decoded from UTF-8,
 * and the HTTP/1.1 client writes one byte per character (latin1). A value's characters above
 * U+00FF must reach the pod as the client's UTF-8 bytes, never narrowed to one byte each, which
 * for U+010D and U+010A are CR and LF: lines of the client's making in the pod's request head.
 */

function chat(): string {
  return JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] });
}

/** Sends a chat request whose `x-note` header value is `bytes`, as is; the bytes of that value as the pod got it. */
async function noteAtPod(routerUrl: string, pod: { heads: Buffer[] }, bytes: Buffer): Promise<Buffer> {
  const body = chat();
  const raw = await rawRequest(routerUrl, Buffer.concat([Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${new URL(routerUrl).host}\r\nx-note: `), bytes,
    Buffer.from(`\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)]));
  expect(raw).toMatch(/^HTTP\/1\.1 200 /);
  const text = pod.heads.pop()!.toString('latin1');
  expect(text).not.toMatch(/\r\n(x-injected|transfer-encoding)/i);
  const line = text.split('\r\n').find((l) => l.startsWith('x-note: '));
  return Buffer.from(line === undefined ? '' : line.slice('x-note: '.length), 'latin1');
}

describe('request header values upstream (raw pod)', () => {
  it('a value with characters outside ASCII reaches the pod as the client\'s UTF-8 bytes, never as CR or LF that start a header', async () => {
    const pod = await startHeadRecordingPod();
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }]), { workers: 1 });
    try {
      const values = [
        'caf\u00e9 \u2615 ok',
        // Narrowed to one byte each: `a`, CR, LF, then a header line of the client's.
        'a\u010d\u010ax-injected:\u0120yes',
        'a\u010d\u010atransfer-encoding:\u0120chunked',
      ];
      for (const value of values) {
        const bytes = Buffer.from(value, 'utf8');
        const got = await noteAtPod(router.url, pod, bytes);
        // The client's bytes (a build of the server that cuts a value at its first byte above 0x7f
        // leaves the ASCII before it), never one byte per character.
        expect(got.length).toBeGreaterThanOrEqual(bytes.findIndex((b) => b > 0x7f));
        expect(got.toString('hex')).toBe(bytes.subarray(0, got.length).toString('hex'));
      }
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });

  it('as configuration.md says: bytes above 0x7f at either end of a value are cut (the server trims them as spaces); a byte that is not UTF-8 within one arrives as U+FFFD', async () => {
    const pod = await startHeadRecordingPod();
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }]), { workers: 1 });
    try {
      const cases: [Buffer, string][] = [
        [Buffer.from('Jos\u00e9', 'utf8'), 'Jos'],
        [Buffer.from('\u00c9mile Zola', 'utf8'), 'mile Zola'],
        [Buffer.from('\u2603', 'utf8'), ''],
        [Buffer.from('a \u2603 b', 'utf8'), Buffer.from('a \u2603 b', 'utf8').toString('latin1')],
        [Buffer.from([0x61, 0xff, 0x62]), 'a\u00ef\u00bf\u00bdb'],
      ];
      for (const [bytes, expected] of cases) expect((await noteAtPod(router.url, pod, bytes)).toString('latin1'), bytes.toString('hex')).toBe(expected);
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });

  it('route rules read a value outside ASCII as the client\'s UTF-8 text, as the pod gets it: exact, prefix and regex match José M', async () => {
    const pod = await startHeadRecordingPod();
    const extraRoutes = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: utf-route, namespace: default }
spec:
  modelName: utf-model
  rules:
    - name: exact
      modelMatch: { headers: { x-user: { exact: "José M" } } }
      targetModels: [{ modelServerName: sf-server }]
    - name: prefix
      modelMatch: { headers: { x-user: { prefix: "Zoë " } } }
      targetModels: [{ modelServerName: sf-server }]
    - name: regex
      modelMatch: { headers: { x-user: { regex: "^Ren(é|e) [A-Z]$" } } }
      targetModels: [{ modelServerName: sf-server }]
`;
    const router = await startRouter(resourcesFor([{ name: 'raw-pod', port: pod.port }], { extraRoutes }), { workers: 1 });
    try {
      const status = async (user: Buffer): Promise<string> => {
        const body = JSON.stringify({ model: 'utf-model', messages: [{ role: 'user', content: 'hi' }] });
        const raw = await rawRequest(router.url, Buffer.concat([Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-user: `), user,
          Buffer.from(`\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)]), wholeAnswer);
        return raw.slice(9, 12);
      };
      for (const user of ['José M', 'Zoë K', 'René X']) expect(await status(Buffer.from(user, 'utf8')), user).toBe('200');
      // The same text as latin1 bytes is another value: no rule matches it.
      expect(await status(Buffer.from('José M', 'latin1'))).toBe('404');
    } finally {
      await router.kill('SIGKILL');
      pod.close();
    }
  });
});
