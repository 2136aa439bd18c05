import type { RateLimitSpec } from '../config/resource-types.js';
import type { LimitKey } from './limit-key.js';
import type { Decision, LimitTerm } from './limiter.js';

/** The refusal notes a worker holds, of either store (local/refusal-notes.ts, redis/refusal-notes.ts). */
export interface NoteDecisions {
  /** The decision the key's note gives a request of `tokens` under `limit` at `now` (allowed or not), or null when no note of the key may decide it. */
  decide(key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): Decision | null;
}

/** The refusal of a request of `tokens` under one limit from its note, else null (no note, or the note lets it through: the store decides). */
export function refusalFrom(notes: NoteDecisions, key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): Decision | null {
  const d = notes.decide(key, limit, tokens, now);
  return d === null || d.allowed ? null : d;
}

/**
 * The decisions of a multi-limit admission (route and tenant) when every one of its limits has a
 * note that may decide it and one of them refuses it: each limit's decision from its note (one
 * that does not refuse as fitting, with its figures), as the store's refusal gives them; else null.
 */
export function refusalsFrom(notes: NoteDecisions, terms: readonly LimitTerm[], tokens: number, now: number): Decision[] | null {
  let refused = false;
  const out: Decision[] = [];
  for (const t of terms) {
    const d = notes.decide(t.key, t.limit, tokens, now);
    if (d === null) return null;
    if (!d.allowed) refused = true;
    out.push(d);
  }
  return refused ? out : null;
}
