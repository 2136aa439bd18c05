import type { StringMatch } from '../config/resource-types.js';

/** A compiled StringMatch: one call, no allocation. */
export type Matcher = (value: string) => boolean;

export function compileMatcher(m: StringMatch): Matcher {
  switch (m.kind) {
    case 'exact': {
      const want = m.value;
      return (v) => v === want;
    }
    case 'prefix': {
      const want = m.value;
      return (v) => v.startsWith(want);
    }
    case 'regex': {
      // Anchored: a regex match must cover the whole value, as in Envoy/Gateway API matching.
      const re = new RegExp(`^(?:${m.value})$`);
      return (v) => re.test(v);
    }
  }
}
