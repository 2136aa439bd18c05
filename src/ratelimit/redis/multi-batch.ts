import { STATUS_ALLOWED, STATUS_REJECTED_INPUT, STATUS_REJECTED_OUTPUT } from '../decision-codec.js';
import { isShadow, type Decision, type LimitState, type LimitTerm } from '../limiter.js';
import { secondsUntil } from '../windows.js';
import { MAX_BATCH_ADMISSIONS } from './batch.js';
import { STATUS_RECALLING } from './lua/counters.js';
import type { Recalling } from './recall-waits.js';

/** Values per limit at the head of the admit-all script's reply: ms to the window end, input used, output used, leases out. */
export const PER_LIMIT = 4;

export interface PendingMulti {
  readonly terms: readonly LimitTerm[];
  readonly tokens: number;
  /** Times the script answered STATUS_RECALLING and the admission was asked again. */
  waits: number;
  resolve(d: Decision[]): void;
  reject(err: unknown): void;
}

/**
 * The multi-limit admissions (route and tenant) of one event-loop turn under the same limits (the
 * same keys, units, limit values and clock reading), sent as one call of the admit-all script
 * (lua/admit-all.ts): decided in arrival order, each atomically across its limits.
 */
export class MultiBatch {
  readonly terms: readonly LimitTerm[];
  readonly args: (string | number)[];
  readonly admissions: PendingMulti[] = [];

  /** `head`: numKeys, the key bases, now, n and per limit unit, limits and shadow flag. */
  constructor(terms: readonly LimitTerm[], head: (string | number)[]) {
    this.terms = terms;
    this.args = head;
  }

  get full(): boolean {
    return this.admissions.length >= MAX_BATCH_ADMISSIONS;
  }

  admit(terms: readonly LimitTerm[], tokens: number): Promise<Decision[]> {
    return new Promise((resolve, reject) => this.join({ terms, tokens, waits: 0, resolve, reject }));
  }

  /** Adds an admission (a new one, or one asked again after waiting for leases to come back). */
  join(a: PendingMulti): void {
    this.args.push(a.tokens);
    this.admissions.push(a);
  }

  /** Resolves every admission from the script's reply; one refused only by limits recalling their leases goes to `recalling` while it may wait. */
  answer(reply: readonly number[], recalling: Recalling<PendingMulti>): void {
    const n = this.terms.length;
    const reset: number[] = [];
    const inUsed: number[] = [];
    const outUsed: number[] = [];
    for (let j = 0; j < n; j++) {
      reset.push(secondsUntil(reply[j * PER_LIMIT], 0));
      inUsed.push(reply[j * PER_LIMIT + 1] - reply[j * PER_LIMIT + 3]); // leases out count as unused (as in batch.ts)
      outUsed.push(reply[j * PER_LIMIT + 2]);
    }
    for (let i = 0; i < this.admissions.length; i++) {
      const a = this.admissions[i];
      const at = n * PER_LIMIT + i * n;
      let admitted = true;
      let waitable = true; // refused, but only by limits whose leases out would let it in
      for (let j = 0; j < n; j++) {
        const status = reply[at + j];
        if (status === STATUS_ALLOWED || isShadow(a.terms[j].limit)) continue;
        admitted = false;
        if (status !== STATUS_RECALLING) waitable = false;
      }
      if (!admitted && waitable && recalling.take(a)) continue;
      if (a.waits > 0) recalling.ended(admitted);
      if (admitted) for (let j = 0; j < n; j++) inUsed[j] += a.tokens;
      const ds: Decision[] = [];
      for (let j = 0; j < n; j++) {
        const status = reply[at + j] === STATUS_RECALLING ? STATUS_REJECTED_INPUT : reply[at + j];
        const limit = a.terms[j].limit;
        ds.push({
          allowed: status === STATUS_ALLOWED,
          rejectedBy: status === STATUS_REJECTED_INPUT ? 'input' : status === STATUS_REJECTED_OUTPUT ? 'output' : null,
          retryAfterSeconds: reset[j],
          input: stateOf(limit.inputTokensPerUnit, inUsed[j], reset[j]),
          output: stateOf(limit.outputTokensPerUnit, outUsed[j], reset[j]),
        });
      }
      a.resolve(ds);
    }
  }

  fail(err: unknown): void {
    for (const a of this.admissions) a.reject(err);
  }
}

function stateOf(limit: number | null, used: number, reset: number): LimitState | null {
  if (limit === null) return null;
  return { limit, remaining: limit > used ? limit - used : 0, resetSeconds: reset };
}
