/**
 * The limiter's script calls as ioredis commands of our own making: ioredis still owns the
 * connection (its reconnects, TLS, AUTH, a Cluster's slots and redirections, the queue of
 * commands waiting for their replies); what it no longer does per call is build the command's
 * bytes (script-args.ts writes them) or keep a timer of its own.
 *
 * - EVALSHA, and EVAL on a connection's first call of the script (as ioredis's `scripts` do: the
 *   calls after it on that connection are answered once Redis has read the script). A reply of
 *   NOSCRIPT (the script cache flushed, `SCRIPT FLUSH`, a replica promoted without it) sends the
 *   call once more as EVAL, on a command of its own, whose reply settles the first.
 * - No timer per command: the limiter times each call itself (late-reply.ts) and reads a reply up
 *   to LATE_REPLY_MS late. ioredis's timer (`commandTimeout`) also deletes a property of the
 *   command when cleared, which leaves the object in V8's dictionary mode for every read after.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { Cluster, Command, Redis } from 'ioredis';
import { ioredis } from './ioredis-module.js';
import type { EncodedCall, ScriptArgs, ScriptHead } from './script-args.js';

/** A script of the limiter: its text, its SHA1, and the connections that have been sent its text. */
export class LimiterScript implements ScriptHead {
  readonly sha: string;
  readonly evalshaHead: Buffer;
  /** The text's bulk string, for the EVAL form: `$len CRLF`, the text, CRLF. */
  readonly #evalArg: Buffer;
  /** The sockets (ioredis's streams) on which the script was sent as EVAL. */
  readonly loadedOn = new WeakSet<object>();

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
    this.evalshaHead = Buffer.from(`$7\r\nevalsha\r\n$${this.sha.length}\r\n${this.sha}\r\n`, 'latin1');
    this.#evalArg = Buffer.from(`$${Buffer.byteLength(lua, 'utf8')}\r\n${lua}\r\n`, 'utf8');
  }

  /** The call as EVAL with the script's text: what follows the SHA1 in `call` kept as it is. */
  evalForm(call: EncodedCall): Buffer {
    const rest = typeof call.bytes === 'string' ? Buffer.from(call.bytes.slice(call.afterSha), 'latin1') : call.bytes.subarray(call.afterSha);
    return Buffer.concat([Buffer.from(`*${call.argc}\r\n$4\r\neval\r\n`, 'latin1'), this.#evalArg, rest]);
  }
}

type ScriptCommandClass = new (client: Redis | Cluster, script: LimiterScript, call: EncodedCall, retry: boolean) => Command & { readonly promise: Promise<Buffer> };

let scriptCommand: ScriptCommandClass | null = null;

/** The command's options: its reply as a Buffer (ioredis reads them when the command is made). */
const REPLY_AS_BYTES = Object.freeze({ replyEncoding: null });

/** The command class, made on first use: ioredis is loaded only by a process with a global limit (ioredis-module.ts). */
function scriptCommandClass(): ScriptCommandClass {
  if (scriptCommand !== null) return scriptCommand;
  const { Command } = ioredis();
  class ScriptCommand extends Command {
    readonly #client: Redis | Cluster;
    readonly #script: LimiterScript;
    readonly #call: EncodedCall;
    /** The EVAL sent after a NOSCRIPT reply: always the script's text, never retried again. */
    readonly #retry: boolean;
    /** The connection it was last written to (where a NOSCRIPT reply says the script is missing). */
    #sentOn: object | null = null;

    /** `retry`: the EVAL sent after a NOSCRIPT reply. */
    constructor(client: Redis | Cluster, script: LimiterScript, call: EncodedCall, retry: boolean) {
      // The arguments ioredis reads: a Cluster finds the node by the first key (after the SHA1 and the key count).
      super('evalsha', commandArgs(script.sha, call.keys), REPLY_AS_BYTES);
      this.#client = client;
      this.#script = script;
      this.#call = call;
      this.#retry = retry;
      if (!retry) {
        const reject = this.reject;
        this.reject = (err: Error): void => {
          if (err.message.includes('NOSCRIPT')) this.#sendAgain(reject);
          else reject(err);
        };
      }
    }

    override toWritable(socket: object): string | Buffer {
      this.#sentOn = socket;
      const loaded = this.#script.loadedOn;
      if (!this.#retry && loaded.has(socket)) return this.#call.bytes;
      loaded.add(socket);
      return this.#script.evalForm(this.#call);
    }

    /** The limiter times each call itself (late-reply.ts): no timer of ioredis's. */
    override setTimeout(): void {}

    /** After NOSCRIPT: the same call as EVAL (its connection no longer counts as loaded), settling this one. */
    #sendAgain(reject: (err: Error) => void): void {
      if (this.#sentOn !== null) this.#script.loadedOn.delete(this.#sentOn);
      const again = new ScriptCommand(this.#client, this.#script, this.#call, true);
      again.promise.then(this.resolve, reject);
      void this.#client.sendCommand(again);
    }
  }
  scriptCommand = ScriptCommand as unknown as ScriptCommandClass;
  return scriptCommand;
}

/** EVALSHA's arguments before the script's own: the SHA1, the key count, the keys. */
function commandArgs(sha: string, keys: readonly string[]): string[] {
  return keys.length === 1 ? [sha, '1', keys[0]] : [sha, String(keys.length), ...keys];
}

/** Sends the call `args` holds (keys and arguments since its begin()) of `script`; its reply's bytes. */
export function sendScript(client: Redis | Cluster, script: LimiterScript, args: ScriptArgs): Promise<Buffer> {
  const Make = scriptCommandClass();
  const command = new Make(client, script, args.call(script), false);
  void client.sendCommand(command);
  return command.promise;
}
