/**
 * The socket of an upstream connection. A server may answer before it read the whole request (a
 * 413 after the head of a large body, a 400) and then close with the request's bytes unread,
 * which makes its kernel reset the connection. A write of the router's that then fails (EPIPE,
 * ECONNRESET) makes Node destroy the socket at once, dropping what the server sent before its
 * reset and this kernel still holds unread: the complete answer. So a failed write asks the
 * connection first (`onWriteFailed`): when it wants to read on, the socket stays open for
 * reading; what the kernel holds arrives as usual, then the end of the stream ('end'), as from a
 * server that closed. The connection closes the socket itself after that.
 */
import { Socket, type OnReadOpts, type SocketConstructorOpts } from 'node:net';

export class UpstreamSocket extends Socket {
  /** The connection's choice on a failed write: true = keep reading (the socket is not destroyed). */
  private readonly onWriteFailed: (err: Error) => boolean;

  /** `onread` is read by Node's constructor, as connect() passes it on (typed on connect's options only). */
  constructor(opts: SocketConstructorOpts & { onread?: OnReadOpts }, onWriteFailed: (err: Error) => boolean) {
    super(opts);
    this.onWriteFailed = onWriteFailed;
  }

  /**
   * Node's stream calls this with the error of a failed write (before it emits anything). Every
   * other destroy, and one the connection does not want held back, goes through.
   */
  override destroy(err?: Error): this {
    if (err !== undefined && (err as NodeJS.ErrnoException).syscall === 'write' && !this.destroyed && this.onWriteFailed(err)) {
      // The failed write marked the read side failed too, which would keep its 'end' from being
      // emitted: the read side did not fail, and its end is how the connection learns that the
      // server's bytes are all read.
      (this as unknown as { _readableState: { errored: Error | null } })._readableState.errored = null;
      return this;
    }
    return super.destroy(err);
  }
}
