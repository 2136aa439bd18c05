import { closeSync, constants, fstatSync, openSync } from 'node:fs';

/**
 * A pipe's write end opened again through /proc/self/fd/N: a description of this process's own,
 * non-blocking, so that a write of at most PIPE_BUF bytes either goes in whole at once or fails
 * with EAGAIN, and never stops the event loop. The descriptor `fd` is left as it is: other
 * processes may share its description (a container's stdout is shared by every process in it)
 * and may not expect a non-blocking pipe. (Node itself makes stdout's description non-blocking
 * once anything opens `process.stdout`, which `new Worker()` of worker_threads does, as the
 * tokenizer pool's threads start; without that pool it stays as it came, often blocking.) -1 when
 * `fd` is no pipe, or the open is not possible (no /proc, a pipe another user owns, no reader left).
 */
export function pipeOpenedNonBlocking(fd: number): number {
  try {
    if (!fstatSync(fd).isFIFO()) return -1;
    const own = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK);
    if (fstatSync(own).isFIFO()) return own;
    closeSync(own);
  } catch {
    // Written through `fd` on the thread pool instead.
  }
  return -1;
}
