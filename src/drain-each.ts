/**
 * Calls `call` on each item of `queue` in order, items added meanwhile included, then empties the
 * queue. One call that throws (a bug) does not keep the others from theirs: the first error is
 * thrown again once every item had its call. For the work a turn of the event loop queues for its
 * end (the exchange's whole answers, the upstream calls' endings).
 */
export function drainEach<T>(queue: T[], call: (item: T) => void): void {
  let failure: unknown = null;
  for (let i = 0; i < queue.length; i++) {
    try {
      call(queue[i]);
    } catch (err) {
      failure ??= err;
    }
  }
  queue.length = 0;
  if (failure !== null) throw failure;
}
