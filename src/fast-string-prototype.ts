/**
 * Keeps `String.prototype` in V8's fast-properties mode.
 *
 * ioredis defines `class VerbatimString extends String` when it loads. Making `String.prototype`
 * the prototype of another prototype puts it into dictionary mode ("setup mode"); V8 makes a
 * prototype fast again only when a property is loaded through a receiver object whose chain holds
 * it, and the router's strings are primitives, which never trigger that. While it stays in
 * dictionary mode, optimised code cannot inline a string method (`charCodeAt`, `slice`,
 * `startsWith`, `toLowerCase` …): every call site loads the method through V8's generic load IC.
 * In the router that was the largest single item of a worker's instructions (callgrind: about 8%
 * of them, most in the HTTP/1.1 client's head parser and the answer's header writer).
 *
 * Loading a method through a `String` wrapper object from a function with feedback marks the
 * prototype as one that should be fast and migrates it back; a later `extends String` then leaves
 * it fast. Call once per process after the modules are loaded (cli.ts), before any request.
 */
export function keepStringPrototypeFast(): void {
  const wrapper = new String('');
  // Enough calls for V8 to give `loadThrough` its feedback vector (its load IC then runs).
  for (let i = 0; i < 1000; i++) loadThrough(wrapper);
}

function loadThrough(s: String): unknown {
  return s.charCodeAt;
}
