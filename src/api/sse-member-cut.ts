/**
 * An event of a server-sent-event stream with the top-level members of one name removed from the
 * JSON object of its data (json-member-cut.ts): every other byte of the event - its other fields,
 * comments, line ends, `data:` prefixes and the rest of the JSON - as it came. The JSON may span
 * several data lines (a client reads them joined with "\n"): each line loses the bytes of the cut
 * that are on it, and keeps its `data:` prefix and line end, even when nothing of its value is left
 * (the "\n" it adds to the data then stands where white space may stand).
 */
import { cutJsonMembers, memberCuts } from './json-member-cut.js';
import { dataValueStart, eachLine } from './sse-lines.js';
import { Buffer } from 'node:buffer';

const LF = Buffer.from('\n');

/** The data lines' values of the event being cut: [start, end) pairs in the event's bytes. */
const values: number[] = [];

function noteDataLine(event: Buffer, start: number, end: number): boolean {
  const valueStart = dataValueStart(event, start, end);
  if (valueStart >= 0) values.push(valueStart, end);
  return true;
}

/**
 * `event` (a complete event's bytes) without the members `key` of its data's JSON; null when there
 * is nothing to cut, and, with `whenSet`, when each of them is `null`.
 */
export function eventWithoutMember(event: Buffer, key: Buffer, whenSet = false): Buffer | null {
  values.length = 0;
  eachLine(event, (start, end) => noteDataLine(event, start, end));
  if (values.length === 0) return null;
  if (values.length === 2) {
    // The usual event: one data line, whose cuts are ranges of the event itself.
    return cutJsonMembers(event, values[0], values[1], key, whenSet) === 0 ? null : withoutRanges(event, memberCuts);
  }
  return cutAcrossLines(event, key, whenSet);
}

/** The data of several lines joined with "\n", cut there; each cut is then taken off the lines it spans. */
function cutAcrossLines(event: Buffer, key: Buffer, whenSet: boolean): Buffer | null {
  const parts: Buffer[] = [];
  for (let i = 0; i < values.length; i += 2) {
    if (i !== 0) parts.push(LF);
    parts.push(event.subarray(values[i], values[i + 1]));
  }
  const data = Buffer.concat(parts);
  if (cutJsonMembers(data, 0, data.length, key, whenSet) === 0) return null;
  // Data offset d of line k (value [vs, ve), at data offset dk) is event offset vs + d - dk.
  const ranges: number[] = [];
  let lineAt = 0; // data offset of the current line's value
  for (let k = 0; k < values.length; k += 2) {
    const vs = values[k];
    const ve = values[k + 1];
    const lineEnd = lineAt + ve - vs;
    for (let c = 0; c < memberCuts.length; c += 2) {
      const from = Math.max(memberCuts[c], lineAt);
      const to = Math.min(memberCuts[c + 1], lineEnd);
      if (from < to) ranges.push(vs + from - lineAt, vs + to - lineAt);
    }
    lineAt = lineEnd + 1; // the "\n" between lines
  }
  return withoutRanges(event, ranges);
}

/** `b` without the [from, to) ranges (in order, not overlapping). */
function withoutRanges(b: Buffer, ranges: readonly number[]): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    if (ranges[i] > at) parts.push(b.subarray(at, ranges[i]));
    at = ranges[i + 1];
  }
  if (at < b.length) parts.push(b.subarray(at));
  return Buffer.concat(parts);
}
