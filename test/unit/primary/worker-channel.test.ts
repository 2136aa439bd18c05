/**
 * A message sent to a worker killed outright fails after the fact with an 'error' event on the
 * worker's process handle; dropMessagesToDeadWorker keeps that from ending the primary. Checked
 * with a real child process killed with SIGKILL while messages are still being sent to it.
 */
import { fork } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropMessagesToDeadWorker } from '../../../src/primary/worker-channel.js';

describe('dropMessagesToDeadWorker', () => {
  it('a worker killed with SIGKILL while messages go to it: the failed sends are dropped, nothing is thrown or logged', async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'ir-channel-')), 'worker.cjs');
    writeFileSync(script, "process.on('message', () => {}); process.send('up'); setInterval(() => {}, 1000);\n");
    const logged: string[] = [];
    const codes: string[] = [];
    const payload = { t: 'load', pods: 'x'.repeat(64 * 1024) };
    // Whether a send fails before the channel's close is noticed is a race: try until it does.
    for (let attempt = 0; attempt < 20 && codes.length === 0; attempt++) {
      const child = fork(script, [], { stdio: 'ignore' });
      await new Promise((resolve) => child.once('message', resolve));
      dropMessagesToDeadWorker(child, (m) => logged.push(m));
      child.on('error', (err: NodeJS.ErrnoException) => codes.push(err.code ?? ''));
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      // Send as the primary does (while isConnected() says so) until the channel's close is noticed.
      while (child.connected) {
        child.send(payload);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await exited;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(codes.length).toBeGreaterThan(0); // the race this guards against did happen
    expect(codes.every((c) => ['EPIPE', 'ECONNRESET', 'ERR_IPC_CHANNEL_CLOSED'].includes(c)), codes.join(',')).toBe(true);
    expect(logged).toEqual([]);
  });

  it('any other error of the channel is logged, not thrown', () => {
    const worker = new EventEmitter();
    const logged: string[] = [];
    dropMessagesToDeadWorker(worker, (m) => logged.push(m));
    worker.emit('error', Object.assign(new Error('serialization failed'), { code: 'ERR_SOMETHING' }));
    expect(logged).toEqual(['message to a worker failed: serialization failed']);
  });
});
