/**
 * A message sent to a worker killed outright fails after the fact with an 'error' event on the
 * worker's process handle; without a listener that event ends the primary. The race itself is
 * exercised end to end by the crash-loop test (test/e2e/lifecycle.test.ts), which hit it; here
 * the listener's rule is checked on a real forked child's handle, deterministically.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropMessagesToDeadWorker } from '../../../src/primary/worker-channel.js';

function channelError(code: string, message = `write ${code}`): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, syscall: 'write' });
}

describe('dropMessagesToDeadWorker', () => {
  let child: ChildProcess;
  beforeEach(async () => {
    const script = join(mkdtempSync(join(tmpdir(), 'ir-channel-')), 'worker.cjs');
    writeFileSync(script, "process.on('message', () => {}); process.send('up'); setInterval(() => {}, 1000);\n");
    child = fork(script, [], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('message', resolve));
  });
  afterEach(() => {
    child.kill('SIGKILL');
  });

  it('without it, a failed send to a worker throws in the primary (the crash it prevents)', () => {
    expect(() => child.emit('error', channelError('EPIPE'))).toThrow('write EPIPE');
  });

  it('the errors of a channel that is gone (EPIPE, ECONNRESET, ERR_IPC_CHANNEL_CLOSED) are dropped, not thrown or logged', () => {
    const logged: string[] = [];
    dropMessagesToDeadWorker(child, (m) => logged.push(m));
    for (const code of ['EPIPE', 'ECONNRESET', 'ERR_IPC_CHANNEL_CLOSED']) {
      expect(() => child.emit('error', channelError(code))).not.toThrow();
    }
    expect(logged).toEqual([]);
  });

  it('any other error of the channel is logged, not thrown', () => {
    const logged: string[] = [];
    dropMessagesToDeadWorker(child, (m) => logged.push(m));
    expect(() => child.emit('error', channelError('ERR_SOMETHING', 'serialization failed'))).not.toThrow();
    expect(logged).toEqual(['message to a worker failed: serialization failed']);
  });
});
