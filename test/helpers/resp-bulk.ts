/**
 * The bulk strings of a RESP command (`*N`, then N times `$len`, the bytes, CRLF), read back
 * strictly (a command given as a string is one character per byte): a length that does not match its bytes, a missing CRLF or bytes after the last
 * string throw. Tests of the bytes the router writes to Redis.
 */
import { Buffer } from 'node:buffer';

export function bulkStrings(command: string | Buffer): string[] {
  // A command written as a string holds one character per byte.
  const bytes = typeof command === 'string' ? Buffer.from(command, 'latin1') : command;
  let at = 0;
  const line = (): string => {
    const end = bytes.indexOf('\r\n', at);
    if (end < 0) throw new Error(`no CRLF after byte ${at}`);
    const text = bytes.toString('latin1', at, end);
    at = end + 2;
    return text;
  };
  const head = line();
  if (!/^\*\d+$/.test(head)) throw new Error(`expected *<count>, got ${JSON.stringify(head)}`);
  const out: string[] = [];
  for (let i = 0, n = Number(head.slice(1)); i < n; i++) {
    const len = line();
    if (!/^\$\d+$/.test(len)) throw new Error(`expected $<length> for string ${i}, got ${JSON.stringify(len)}`);
    const size = Number(len.slice(1));
    if (bytes[at + size] !== 13 || bytes[at + size + 1] !== 10) throw new Error(`string ${i} of ${size} bytes is not followed by CRLF`);
    out.push(bytes.toString('utf8', at, at + size));
    at += size + 2;
  }
  if (at !== bytes.length) throw new Error(`${bytes.length - at} bytes after the last string`);
  return out;
}
