/**
 * What a redis-server has run, for the global limit's share of the bench: the number of script
 * calls so far (INFO commandstats: EVALSHA, EVAL and FCALL together), read over a connection
 * of its own before and after a run, so the calls per request come from the server's counts.
 */
import net from 'node:net';

const SCRIPT_COMMANDS: ReadonlySet<string> = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);

/** Sum of `calls=` over the script commands of an INFO commandstats reply. */
export function scriptCallsIn(info: string): number {
  return sumOverScripts(info, 1);
}

/** Sum of `usec=` (time spent running the commands, I/O not counted) over the script commands of an INFO commandstats reply. */
export function scriptUsecIn(info: string): number {
  return sumOverScripts(info, 2);
}

/** Sum of one figure (1: calls, 2: usec) of the script commands' lines `cmdstat_<name>:calls=N,usec=N,...`. */
function sumOverScripts(info: string, figure: 1 | 2): number {
  let sum = 0;
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([a-z_]+):calls=(\d+)(?:,usec=(\d+))?/.exec(line.trim());
    if (m !== null && SCRIPT_COMMANDS.has(m[1]) && m[figure + 1] !== undefined) sum += Number(m[figure + 1]);
  }
  return sum;
}

/** Sends INFO commandstats to `host:port` and returns the reply's text (a RESP bulk string). */
export function infoCommandstats(address: string, timeoutMs = 2000): Promise<string> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, host);
    const chunks: Buffer[] = [];
    const fail = (err: Error): void => {
      clearTimeout(timer);
      sock.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`redis-server at ${address}: no reply to INFO commandstats within ${timeoutMs} ms`)), timeoutMs);
    sock.on('connect', () => sock.write('*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n'));
    sock.on('error', fail);
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      const all = Buffer.concat(chunks);
      if (all[0] === 0x2d /* '-' */) {
        fail(new Error(`redis-server at ${address}: INFO commandstats failed: ${all.toString('utf8').trim()}`));
        return;
      }
      const nl = all.indexOf('\r\n');
      if (all[0] !== 0x24 /* '$' */ || nl < 0) return;
      const length = Number(all.subarray(1, nl).toString('latin1'));
      if (all.length < nl + 2 + length) return;
      clearTimeout(timer);
      sock.destroy();
      resolve(all.subarray(nl + 2, nl + 2 + length).toString('utf8'));
    });
  });
}


/** Script calls the server at `address` has run so far. */
export async function scriptCalls(address: string): Promise<number> {
  return scriptCallsIn(await infoCommandstats(address));
}
