/**
 * An event of a server-sent-event stream with one top-level member removed from the JSON object
 * of its data (json-member-cut.ts): every other byte of the event - its other fields, comments,
 * line ends and the rest of the JSON - as it came. Only an event whose data is on one line is cut.
 */
import { cutJsonMember, memberCut } from './json-member-cut.js';
import { dataValueStart, eachLine } from './sse-lines.js';
import { Buffer } from 'node:buffer';

const found = { valueStart: -1, end: -1, lines: 0 };

function noteDataLine(event: Buffer, start: number, end: number): boolean {
  const valueStart = dataValueStart(event, start, end);
  if (valueStart < 0) return true;
  found.valueStart = valueStart;
  found.end = end;
  return ++found.lines === 1;
}

/** `event` (a complete event's bytes) without the member `key` of its data's JSON; null when there is nothing to cut. */
export function eventWithoutMember(event: Buffer, key: Buffer): Buffer | null {
  found.lines = 0;
  eachLine(event, (start, end) => noteDataLine(event, start, end));
  if (found.lines !== 1 || !cutJsonMember(event, found.valueStart, found.end, key)) return null;
  return Buffer.concat([event.subarray(0, memberCut.from), event.subarray(memberCut.to)]);
}
