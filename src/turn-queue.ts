/**
 * The work a turn of the event loop queues for its end (the exchange's whole answers, the upstream
 * calls' endings, the requests' writes): items kept in order, then each given its call once.
 *
 * Its array is never shortened: an item goes in at the count and the slot is cleared (null) once
 * called, so the next turn stores into slots the array already has. Setting an array's `length` is
 * a call into V8's runtime that also gives the backing store back, which the next turn's push then
 * allocates again: 760 instructions a turn against 137 for a queue of one
 * (docs/internals/performance-changes.md, "A turn's queues keep their slots").
 */
export class TurnQueue<T> {
  private readonly items: (T | null)[] = [];
  private count = 0;

  /** Items queued and not yet called. */
  get size(): number {
    return this.count;
  }

  push(item: T): void {
    this.items[this.count++] = item;
  }

  /**
   * Calls `call` on each item in order, items queued meanwhile included, then empties the queue.
   * One call that throws (a bug) does not keep the others from theirs: the first error is thrown
   * again once every item had its call.
   */
  drainEach(call: (item: T) => void): void {
    const items = this.items;
    let failure: unknown = null;
    for (let i = 0; i < this.count; i++) {
      const item = items[i] as T;
      items[i] = null;
      try {
        call(item);
      } catch (err) {
        failure ??= err;
      }
    }
    this.count = 0;
    if (failure !== null) throw failure;
  }
}
