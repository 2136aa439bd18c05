import { admitTerms, type LimiterTerm } from './admit-all.js';
import { failureModeBit, withLateCharge } from './failure-mode-marks.js';
import { isShadow, type Decision, type LateCharge, type LimitState } from './limiter.js';
import type { LimitKey } from './limit-key.js';

export type LimitScope = 'route' | 'tenant';

/** A limit of one request with the scope it belongs to. */
export interface ScopedTerm extends LimiterTerm {
  readonly scope: LimitScope;
}

/** The outcome of admitting one request against all its limits. */
export interface RequestAdmission {
  /** No enforced limit refused (shadow ones never do); every term was charged. */
  readonly admitted: boolean;
  /** What the x-ratelimit-* headers show: the refusing limit (of several, the one that resets last), else the enforced one closest to exhaustion; null when only shadow limits apply. */
  readonly shown: Decision | null;
  readonly shownScope: LimitScope | null;
  /** The limit key of `shown` (the 429 of a refused request names that limit: one rejection, counted under it). */
  readonly shownKey: LimitKey | null;
  /**
   * Bit i set: term i was decided by a failure mode (its store unavailable; Decision.byFailureMode),
   * so its input corrections and give-backs go where that charged it, not to the store.
   */
  readonly byFailureMode: number;
  /**
   * What a store may still charge late of an admission its `open` failure mode admitted (the
   * Decisions' lateCharge), to undo when the request gives its input back; null: none (always so
   * unless a call failed).
   */
  readonly lateCharges: LateCharge[] | null;
  /**
   * Per term, the window its store charged (Decision.window; -1: the process clock's), which its
   * input corrections and give-backs carry; null when no store keeps a clock of its own (local mode).
   */
  readonly windows: number[] | null;
}

/**
 * Admits a request against every limit that applies (route and tenant), atomically where the
 * stores allow (admit-all.ts): a request refused by one limit charges none. A single enforced
 * limit is asked alone (a local lease answers synchronously, without the batch machinery).
 */
export function admitRequest(terms: readonly ScopedTerm[], inputTokens: number): Promise<RequestAdmission> | RequestAdmission {
  if (terms.length === 1 && !isShadow(terms[0].limit)) {
    const t = terms[0];
    const d = t.limiter.admit(t.key, t.limit, inputTokens);
    return d instanceof Promise ? d.then((v) => alone(t, v)) : alone(t, d);
  }
  const ds = admitTerms(terms, inputTokens);
  // Leases held for every limit decide synchronously (local mode).
  return ds instanceof Promise ? ds.then((v) => outcome(terms, v)) : outcome(terms, ds);
}

function alone(t: ScopedTerm, d: Decision): RequestAdmission {
  return { admitted: d.allowed, shown: d, shownScope: t.scope, shownKey: t.key, byFailureMode: failureModeBit(d, 0), lateCharges: withLateCharge(null, d), windows: d.window === undefined ? null : [d.window] };
}

function outcome(terms: readonly ScopedTerm[], ds: Decision[]): RequestAdmission {
  let shown: Decision | null = null;
  let scope: LimitScope | null = null;
  let key: LimitKey | null = null;
  let best = Infinity;
  let refused = false;
  let byFailureMode = 0;
  let lateCharges: LateCharge[] | null = null;
  for (let i = 0; i < ds.length; i++) {
    const d = ds[i];
    byFailureMode |= failureModeBit(d, i);
    lateCharges = withLateCharge(lateCharges, d);
    if (isShadow(terms[i].limit)) continue;
    if (!d.allowed) {
      // Of several limits that refuse, the one whose window resets last: the request cannot pass
      // before then, so that is its retry-after (a route's minute ends long before a tenant's day).
      if (!refused || d.retryAfterSeconds > shown!.retryAfterSeconds) {
        shown = d;
        scope = terms[i].scope;
        key = terms[i].key;
      }
      refused = true;
      continue;
    }
    if (refused) continue;
    const f = Math.min(fraction(d.input), fraction(d.output));
    if (shown === null || f < best) {
      shown = d;
      scope = terms[i].scope;
      key = terms[i].key;
      best = f;
    }
  }
  return { admitted: !refused, shown, shownScope: scope, shownKey: key, byFailureMode, lateCharges, windows: windowsOf(ds) };
}

/** Each decision's Decision.window (-1 where it has none), or null when none has one. */
export function windowsOf(ds: readonly Decision[]): number[] | null {
  let windows: number[] | null = null;
  for (let i = 0; i < ds.length; i++) {
    const w = ds[i].window;
    if (w === undefined) continue;
    if (windows === null) windows = new Array<number>(ds.length).fill(-1);
    windows[i] = w;
  }
  return windows;
}

/** How much of a limit is left, 0..1 (no limit: Infinity). */
function fraction(s: LimitState | null): number {
  return s === null ? Infinity : s.remaining / s.limit;
}
