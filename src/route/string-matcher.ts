import type { StringMatch } from '../config/resource-types.js';
import { routeRegex } from '../config/route-regex.js';

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
      // Found anywhere in the value, as the route API's reference router matches (^…$ for the whole value).
      const re = routeRegex(m.value);
      return (v) => re.test(v);
    }
  }
}
