import { expect } from 'vitest';
import { RouterError } from '../../src/errors.js';

/**
 * The pieces of the seeded random request bodies that test a parser's shortcuts against a whole
 * parse (openai-tools.test.ts, openai-system-prompt.test.ts): the same sequence for a seed, white
 * space of the kinds clients send, and a body broken by one byte now and then.
 */

/** A seeded generator of whole numbers from 0 to n - 1 (a linear congruential one). */
export function seededBelow(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
}

const SPACES = ['', ' ', '\n  ', '\t'];
const BREAKERS = ['}', ',', '"', 'x', ']', '\\'];

/** Random white space, as clients write it between tokens. */
export function randomSpace(rand: (n: number) => number): string {
  return SPACES[rand(SPACES.length)];
}

/** An object of `members` (each `"key":value`), spaced at random; one body in six broken by a byte inserted anywhere. */
export function fuzzedObject(members: readonly string[], rand: (n: number) => number): string {
  const sp = () => randomSpace(rand);
  const text = `${sp()}{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}${sp()}`;
  if (rand(6) !== 0) return text;
  const at = rand(text.length);
  return text.slice(0, at) + BREAKERS[rand(BREAKERS.length)] + text.slice(at);
}

/** JSON.parse of `text`, or undefined when it is not JSON. */
export function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * What the router answers a body whose text is `text` when a whole parse refuses it or it names no
 * model ("400 " and the message): the parser's own message, as a whole parse gives it.
 */
export function wholeParseRefusal(text: string): string {
  try {
    JSON.parse(text);
    return '400 request body must name a model: "model" must be a non-empty string';
  } catch (err) {
    return `400 request body is not valid JSON: ${(err as Error).message}`;
  }
}

/** The router's refusal `f` threw ("400 " and the message); fails the test when it threw something else or nothing. */
export function refusalOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(RouterError);
    return `${(err as RouterError).status} ${(err as Error).message}`;
  }
  throw new Error('accepted');
}
