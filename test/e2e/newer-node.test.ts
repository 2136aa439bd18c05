/**
 * The built router on the runtimes that load the uWS 20.57 build, each with a newer glibc than this
 * machine's (Debian 13's, unpacked into a private directory by shared/tools/node-on-newer-glibc.sh):
 * Node 24 (the image's), Node 22, and Node 20 on that glibc (which then prefers 20.57 over 20.30).
 * On each it picks the 20.57 build, routes, streams and enforces a local token limit across
 * node:cluster workers, answers as that build's HTTP parser does, refuses an access-log path under a
 * file and reads a 7 KB body into the memory used again (the last two differed on Node 22 and 24).
 * A runtime that cannot be had is skipped, with the reason in the test name.
 * ROUTER_TEST_NODE<major> (e.g. ROUTER_TEST_NODE24) may name a binary of that major instead.
 */
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postFresh, postJson, resourcesFor, ROOT, startLoggedRouter, startMock, startRouter, tempDir, waitFor, awayFromMinuteBoundary, type MockBackend } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { sample } from '../helpers/metrics-text.js';
import { expectAsBuildAnswers, raw, expectAsBuildLimits, sendBeyondLimits, sendUnreadable } from '../helpers/raw-http.js';

/** Finds a Node of a major (ROUTER_TEST_NODE<major>, or shared/tools/node-on-newer-glibc.sh), as test/on-node24.sh does. */
const FIND_NODE = join(ROOT, 'test/find-node.sh');

/**
 * The built router run on `node` with the example resources on a free port until it exits (a
 * start it refuses): its exit status (null when it did not exit within 30 s) and its stderr.
 */
async function exitOf(node: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<{ status: number | null; stderr: string }> {
  const port = await freePort();
  const r = spawnSync(node, [join(ROOT, 'dist/cli.js'), '--resources', join(ROOT, 'examples/resources.yaml'), '--port', String(port), ...args], {
    encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  return { status: r.status, stderr: r.stderr };
}

/** The majors tested: the image's first. */
const MAJORS = [24, 22, 20] as const;

/** A Node of `major` here, or why there is none. One named by ROUTER_TEST_NODE<major> is taken as it is; one the tool made must be of that major. */
function findNode(major: number): { node: string | null; reason: string } {
  const found = spawnSync('bash', [FIND_NODE, String(major)], { encoding: 'utf8', timeout: 300_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (found.status !== 0) return { node: null, reason: found.stderr.trim() || `${FIND_NODE} failed (${found.error?.message ?? `signal ${found.signal}`})` };
  const node = found.stdout.trim();
  if (process.env[`ROUTER_TEST_NODE${major}`]) return { node, reason: '' };
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  return version.startsWith(`v${major}.`) ? { node, reason: '' } : { node: null, reason: `${node} is ${version || 'not a runnable node'}` };
}

for (const major of MAJORS) {
  const { node, reason } = findNode(major);
  // Shown as a skipped test, with the reason, where that runtime cannot be had.
  if (node === null) it.skip(`built router on Node ${major}: no Node ${major} on a glibc >= 2.38 here (${reason})`, () => {});

  // The runtimes side by side (each its own pod; their tests one after the other): most of each
  // runtime's time is the wait for an idle connection to be closed.
  describe.skipIf(node === null)(`built router on Node ${major} with glibc >= 2.38 (uWS 20.57 build)`, { concurrent: true }, () => {
    let mock: MockBackend;
    beforeAll(async () => {
      mock = await startMock(`pod-node${major}`);
    });
    afterAll(async () => {
      await mock?.kill();
    });

    it.sequential('routes plain and streaming requests with 2 workers and reports its runtime in build_info', async () => {
      const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { serverModel: 'real-model-v1' }), { workers: 2, node: node! });
      try {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        expect(r.status).toBe(200);
        expect((await r.json() as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(16);
        expect((await mock.stats()).lastBody.model).toBe('real-model-v1');

        const s = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
        expect(s.status).toBe(200);
        expect(s.headers.get('content-type')).toContain('text/event-stream');
        const text = await s.text();
        expect(text).toContain('data: [DONE]');

        const unknown = await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' });
        expect(unknown.status).toBe(404);

        const metrics = await (await fetch(`${router.url}/metrics`)).text();
        expect(metrics).toMatch(new RegExp(`^inference_router_build_info\\{version="[^"]+",node="v${major}\\.[^"]+",uws="uws-20\\.57"\\} 1$`, 'm'));
      } finally {
        await router.kill();
      }
    });

    it.sequential('closes a connection that makes no progress after about 10 s, as on the 20.30 build (this build defaults to 30 s)', async () => {
      const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, node: node! });
      try {
        const port = Number(new URL(router.url).port);
        // Kept alive after its answer; a header block cut short; an upload that stops.
        const starts = [
          'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n',
          'GET /healthz HTTP/1.1\r\nhos',
          'POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"mo',
        ];
        const closedAfter = await Promise.all(starts.map((start) => new Promise<number>((resolve, reject) => {
          const t0 = Date.now();
          const s = connect(port, '127.0.0.1', () => s.write(start));
          s.on('data', () => {});
          s.on('error', () => {});
          s.on('close', () => { clearTimeout(giveUp); resolve(Date.now() - t0); });
          const giveUp = setTimeout(() => { s.destroy(); reject(new Error(`still open after 25 s: ${JSON.stringify(start.slice(0, 30))}`)); }, 25_000);
        })));
        for (const ms of closedAfter) {
          expect(ms).toBeGreaterThan(5_000);
          expect(ms).toBeLessThan(25_000);
        }
      } finally {
        await router.kill();
      }
    }, 40_000);

    it.sequential('answers HTTP/1.0 with 505, a request without Host with 400, 99 header lines with 431, an absolute-form target and OPTIONS * with 505, none recorded; a chunk extension with 400 and a close (recorded 499); a request trailer taken for a pipelined request (505, recorded 444)', async () => {
      const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { node: node! });
      const log = router.logFile;
      try {
        const [r, limits] = await Promise.all([
          sendUnreadable(router.port, JSON.stringify({ model: 'sf-model', prompt: 'hi' }), 'unreadable'),
          sendBeyondLimits(router.port, 'uws-20.57', 'limits'),
        ]);
        expectAsBuildAnswers('uws-20.57', r);
        expectAsBuildLimits('uws-20.57', limits);
        // Only the GET within the header lines' limit and the two uploads reached the router; uWS
        // closed the first upload's connection at its extension and took the second's trailer for
        // a pipelined request.
        await waitFor('the records', () => accessLogRecords(log).length === 3, 5_000);
        expect(accessLogRecords(log).map((x) => [x.request_id, x.status_code, x.error?.type]).sort()).toEqual([
          ['limits-most', 405, 'invalid_request'],
          ['unreadable-chunk-extension', 499, 'client_closed'],
          ['unreadable-trailer', 444, 'pipelining_refused'],
        ]);
        expect(accessLogRecords(log).find((x) => x.request_id === 'unreadable-chunk-extension').error.message).toBe('the connection closed while the request body was arriving (0 bytes of a chunked body received)');
      } finally {
        await router.kill();
      }
    }, 40_000);

    it.sequential('reads request heads up to ROUTER_MAX_HEADER_BYTES (64 KiB by default; the build alone stops at 4 KiB) and answers 431 beyond', async () => {
      const statusWith = async (url: string, bytes: number): Promise<number> => (await fetch(`${url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-big': 'h'.repeat(bytes) },
        body: JSON.stringify({ model: 'sf-model', prompt: 'hi' }),
      })).status;
      const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, node: node! });
      try {
        expect(await statusWith(router.url, 8_000)).toBe(200);
        expect(await statusWith(router.url, 60_000)).toBe(200);
        // The same head in two writes 100 ms apart (a slow client): read whole, as in one read.
        const body = JSON.stringify({ model: 'sf-model', prompt: 'hi' });
        const req = `POST /v1/completions HTTP/1.1\r\nHost: router\r\ncontent-type: application/json\r\nx-big: ${'h'.repeat(60_000)}\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
        const split = await raw(router.port, [req.slice(0, 1000), req.slice(1000)], { gapMs: 100 });
        expect(split.text.slice(0, 15), split.text.slice(0, 300)).toBe('HTTP/1.1 200 OK');
        expect(await statusWith(router.url, 70_000)).toBe(431);
      } finally {
        await router.kill();
      }
      const small = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, node: node!, env: { ROUTER_MAX_HEADER_BYTES: '8192' } });
      try {
        expect(await statusWith(small.url, 7_000)).toBe(200);
        expect(await statusWith(small.url, 9_000)).toBe(431);
      } finally {
        await small.kill();
      }
    }, 40_000);

    it.sequential('enforces a local input-token limit across workers: 200, 200, 429', async () => {
      const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
        rateLimit: '    inputTokensPerUnit: 10\n    outputTokensPerUnit: 5000\n    unit: minute',
      }), { workers: 2, node: node! });
      try {
        await awayFromMinuteBoundary();
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          statuses.push((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 })).status);
        }
        expect(statuses).toEqual([200, 200, 429]);
      } finally {
        await router.kill();
      }
    });

    // Node 24's Buffer.poolSize is 64 KiB: the body memory must still start at 4 KiB there, not at
    // half the pool (src/body-memory.ts), or an agent's 7 KB turn comes from Node's pool instead.
    it.sequential('reads a 7 KB request body into the memory used again (its 8 KiB free again after the request, by /metrics)', async () => {
      const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, node: node! });
      try {
        const free = async (): Promise<number | undefined> => sample(await (await fetch(`${router.url}/metrics`)).text(), 'inference_router_body_memory_free_bytes{memory="ordinary"}');
        expect(await free()).toBe(0);
        const r = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [{ role: 'system', content: 'be brief. '.repeat(700) }, { role: 'user', content: 'hi' }] });
        expect(r.status).toBe(200);
        await r.text();
        await waitFor('the body memory given back', async () => (await free()) === 8192, 5_000);
      } finally {
        await router.kill();
      }
    });

    // Node 22 and later stat a path under a file as absent (nodejs/node#56993): the check must not
    // take that for a file it can create (it did, and every record then failed in the workers).
    it.sequential('refuses at start an access-log path under a file, exit 2, naming the setting and the part that is a file', async () => {
      const dir = tempDir();
      const file = join(dir, 'plain-file');
      writeFileSync(file, 'x');
      const under = join(file, 'sub', 'access.log');
      const { status, stderr } = await exitOf(node!, ['--workers', '1'], { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_OUTPUT: under });
      expect(status).toBe(2);
      expect(stderr).toContain(`ACCESS_LOG_OUTPUT: cannot append to "${under}": its directory "${join(file, 'sub')}" is not a directory (a part of it is a file)`);
    });
  });
}

/**
 * Node 26 (ABI 147; the active LTS line since 2026-10-28): neither installed build has a binary for
 * it, and no build on the npm registry does yet, so the built router refuses to start there, exit 2,
 * naming the runtime, each build's reason and what to run instead (docs/deploy.md#supported-runtimes).
 * When a build for it is added, this test fails and the docs' statement goes with it.
 */
{
  const { node, reason } = findNode(26);
  if (node === null) it.skip(`built router on Node 26: no Node 26 on a glibc >= 2.38 here (${reason})`, () => {});
  it.skipIf(node === null)('built router on Node 26 refuses to start, exit 2, naming ABI 147, each build and the runtimes to run', async () => {
    const { status, stderr } = await exitOf(node!);
    expect(status).toBe(2);
    expect(stderr).toMatch(/^inference-router: no uWebSockets\.js native build loads on Node v26\.\S+ \(ABI 147, linux-x64\) with glibc \d+\.\d+:$/m);
    expect(stderr).toContain('  - uws-20.57 (@btc-vision/uwebsockets.js): no binary for Node ABI 147 (has 115, 127, 137, 141)');
    expect(stderr).toContain('  - uws-20.30 (uWebSockets.js): no binary for Node ABI 147 (has 115)');
    expect(stderr).toContain('Run Node 24 or 22 on linux x64/arm64 with glibc >= 2.38');
    expect(stderr).toContain('Node 26 and later have no build yet');
  });
}
