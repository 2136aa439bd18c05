/**
 * The validator of a ModelRoute's `spec.parentRefs`: a list of the Gateway API's ParentReference,
 * checked as that API's schema checks it (the route API's CRD embeds it as it is), so that a route
 * the API server would refuse is refused here too, naming the entry and the field, rather than
 * bound to the wrong Gateway (a misspelt namespace) or to none (an entry without a name):
 *
 * - `name`: required, 1 to 253 characters (any object name);
 * - `namespace`: a DNS label (1 to 63 characters); the route's own namespace when left out;
 * - `group`: empty (the core group) or a DNS subdomain of at most 253 characters;
 * - `kind`: a letter, then letters, digits and `-`, 1 to 63 characters;
 * - `sectionName`: a DNS subdomain of 1 to 253 characters;
 * - `port`: an integer from 1 to 65535.
 *
 * A field set to null counts as left out, as elsewhere in these resources. The Gateway API's rules
 * across entries (no two naming one parent without telling their sectionName or port apart, at
 * most 32 entries) are not checked: they decide nothing about which Gateway a route is bound to.
 * `fail(path, problem)` throws the caller's error type.
 */
import { describe, isPlainObject } from './describe-value.js';
import type { FailFn } from './rate-limit-spec.js';
import type { ParentRef } from './resource-types.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** The Gateway API's pattern of a group and a sectionName: dot-separated DNS labels. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KIND = /^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$/;

const SUBDOMAIN_TEXT = 'lower-case letters, digits, \'-\' and \'.\' between them';

/** spec.parentRefs as read for binding (gateway-binding.ts): [] when left out. */
export function parseParentRefs(v: unknown, path: string, routeNamespace: string, fail: FailFn): ParentRef[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(path, `expected a list of parent references ({name, namespace, kind, ...}), got ${describe(v)}`);
  return v.map((item, i) => parentRef(item, `${path}[${i}]`, routeNamespace, fail));
}

function parentRef(v: unknown, path: string, routeNamespace: string, fail: FailFn): ParentRef {
  if (!isPlainObject(v)) {
    fail(path, v === undefined || v === null ? 'is required: expected a mapping with a name' : `expected a mapping with a name, got ${describe(v)}`);
  }
  const name = v.name;
  if (typeof name !== 'string' || name === '') {
    fail(`${path}.name`, name === undefined || name === null
      ? 'is required: expected the name of the Gateway (or other parent) the route is bound to'
      : `expected a non-empty string, got ${describe(name)}`);
  }
  if (name.length > 253) fail(`${path}.name`, `must be at most 253 characters, got ${name.length}`);
  const namespace = optText(v.namespace, `${path}.namespace`, fail, (s) => s.length <= 63 && DNS_LABEL.test(s),
    'a namespace name (lower-case letters, digits and \'-\', at most 63 characters); leave it out for the route\'s own namespace');
  const group = optText(v.group, `${path}.group`, fail, (s) => s === '' || (s.length <= 253 && DNS_SUBDOMAIN.test(s)),
    `an API group: "" for the core group, or ${SUBDOMAIN_TEXT} (at most 253 characters); leave it out for gateway.networking.k8s.io`, true);
  const kind = optText(v.kind, `${path}.kind`, fail, (s) => s.length <= 63 && KIND.test(s),
    'a kind (a letter, then letters, digits and \'-\', at most 63 characters), such as Gateway');
  const sectionName = optText(v.sectionName, `${path}.sectionName`, fail, (s) => s.length <= 253 && DNS_SUBDOMAIN.test(s),
    `a listener name (${SUBDOMAIN_TEXT}, at most 253 characters)`);
  const port = v.port;
  if (port !== undefined && port !== null && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) {
    fail(`${path}.port`, `must be an integer from 1 to 65535, got ${describe(port)}`);
  }
  return { group, kind, namespace: namespace ?? routeNamespace, name, sectionName };
}

/**
 * An optional string field: null when left out (or null), else the string when `valid`; anything
 * else fails with `expected <what>`. `emptyAllowed`: '' is a value (group: the core group); else
 * '' is refused as the Gateway API refuses it (at least 1 character).
 */
function optText(v: unknown, path: string, fail: FailFn, valid: (s: string) => boolean, what: string, emptyAllowed = false): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') fail(path, `expected ${what}, got ${describe(v)}`);
  if ((v === '' && !emptyAllowed) || !valid(v)) fail(path, `must be ${what}, got ${describe(v)}`);
  return v;
}
