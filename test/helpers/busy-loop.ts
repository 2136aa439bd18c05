/**
 * Holds this process's event loop for `ms` in this turn's check phase (after the turn's I/O and
 * the Immediates queued before this call), as a long task, a collection or a CPU taken by other
 * processes would; `first`, when given, runs just before, in the same Immediate (so what it starts
 * cannot be answered and read before the loop is held). The next turn runs the timers that came
 * due meanwhile before it reads the sockets: the case of a timeout whose answer arrived in time
 * but is still unread.
 */
export function busyAfterThisTurn(ms: number, first?: () => void): Promise<void> {
  return new Promise((resolve) => setImmediate(() => {
    first?.();
    const until = Date.now() + ms;
    while (Date.now() < until) { /* busy */ }
    resolve();
  }));
}
