/**
 * Process-wide drain state. `draining`: every answer closes its connection (no more keep-alive),
 * from SIGTERM on (the drain delay included); for a worker retired alone, from the close of its
 * listener on.
 * `closing`: in-flight requests are done and the last records are being flushed; a request that
 * still arrives on an old keep-alive connection gets the connection closed without an answer
 * (as if it had come after exit), so no answered request can miss its access-log record. The
 * worker closes every connection itself as soon as nothing is in flight, so such a request is
 * one that was already on its way.
 * `tailMayBeBuffered`: a streamed answer ended during the drain after its connection had pushed
 * back (a slow reader): its last bytes may still be in the HTTP server's own buffer, which no API
 * reports and closing the connections would drop. Where the kernel's send queues can be read
 * (Linux: http/client-send-queue.ts) the worker waits for those instead, which also covers the
 * bytes written with an end that uWS reported as taken; elsewhere it leaves the connections open
 * to the drain deadline when this is set.
 */
export const drainState = { draining: false, closing: false, tailMayBeBuffered: false };
