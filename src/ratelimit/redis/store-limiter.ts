import type { Clock } from '../../clock.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { LimitStoreUnavailableError } from '../errors.js';
import type { LimitKey } from '../limit-key.js';
import { isShadow, type Decision, type LimitTerm, type TokenLimiter } from '../limiter.js';
import { admitInOrder } from '../admit-all.js';
import { MULTI_IN_USED, MULTI_INCARNATION, MULTI_LEASE, MULTI_LEASES_OUT, MULTI_MS, MULTI_OUT_USED, MULTI_RECALL, MULTI_WINDOW, PER_LIMIT, type LeaseSlot, type MultiBatch, type PendingMulti } from './multi-batch.js';
import { tokenCountError, tokenDeltaError } from '../token-amounts.js';
import { parseRedisAddress } from './address.js';
import { redisKeyBase } from './key-base.js';
import { FIRST_STATUS, REPLY_INCARNATION, REPLY_LEASE, REPLY_MS, REPLY_WINDOW, type Batch, type PendingAdmission } from './batch.js';
import { answeredWithin, awaitReply } from './late-reply.js';
import { NO_LIMIT } from '../decision-codec.js';
import { parseScriptReply } from './script-reply.js';
import { createLimiterClient, DEFAULT_TUNING, type LimiterClient } from './connection.js';
import { BATCH_LUA } from './lua/batch.js';
import { ADMIT_ALL_LUA } from './lua/admit-all.js';
import { ScriptArgs } from './script-args.js';
import { LimiterScript, sendScript } from './script-command.js';
import { StoreHealth, type StoreState } from './health.js';
import { aclRefusalLine, refusedScriptCommands } from './acl-check.js';
import { databaseRefusal } from './database-check.js';
import { HeldGiveBacks, runIdOf } from './held-give-backs.js';
import { evictingPolicy, evictionWarning } from './eviction.js';
import { Incarnations, NO_INCARNATION } from './incarnations.js';
import { failInDoubt, failMultiInDoubt, type InDoubtCharge, type LateChargeUndo } from './late-charge.js';
import { giveBackInto, LEASE_IDLE_MS, RedisLeases, type LeaseEvent, type LeaseReturn } from './leases.js';
import { RecallWaits, recallWaits } from './recall-waits.js';
import { RedisRefusalNotes } from './refusal-notes.js';
import type { RedisLimitSettings } from './settings.js';
import { clockArgument, SETTLE_WAIT_MS, TurnBatches } from './turn-batches.js';
import { performance } from 'node:perf_hooks';
import type { Buffer } from 'node:buffer';

export interface RedisStoreOptions {
  /**
   * Injected clock (tests): its time is passed to the scripts instead of the Redis server's
   * TIME. Without it, windows follow the Redis server clock, shared by every instance.
   */
  clock?: Clock;
  /**
   * Where the outage / recovery lines go (once per transition). Default: stderr. `warn` marks the
   * lines that say something is wrong (the store unreachable or unavailable, credentials ignored),
   * `error` the one saying the Redis user may not run a command the scripts call (acl-check.ts).
   */
  log?: (message: string, level?: 'warn' | 'error') => void;
  /** Delay between health pings while the store is down, ms (default 500). */
  probeIntervalMs?: number;
  /** Longest a settle with no admission of its key waits to ride along with one, ms (default SETTLE_WAIT_MS). */
  settleWaitMs?: number;
  /** Cap of the reconnect backoff, ms (default 2000). */
  reconnectCapMs?: number;
  /** Initial connect timeout, ms (default 2000). */
  connectTimeoutMs?: number;
  /** Observability hook (metrics): a store command failed, or a connection attempt (each one while Redis cannot be reached). */
  onStoreError?: (store: string) => void;
  /** Observability hook (metrics): a lease of the global limit was lent, given back, recalled or forfeited. */
  onLease?: (event: LeaseEvent) => void;
  /** Observability hook (metrics): an admission that waited for leases to come back was admitted or refused. */
  onRecallWait?: (admitted: boolean) => void;
}

/**
 * The Redis store of the global limits: counters shared by every router instance, one client per
 * store. Semantics are TokenLimiter's (limiter.ts); counters are keyed by limit key (limit-key.ts).
 *
 * Batching: the operations issued during one event-loop turn are collected per limit key and
 * sent when the turn ends (turn-batches.ts), each batch as one call of the batch script
 * (lua/batch.ts), which applies the summed settles, then decides each admission in arrival order
 * by the admission rule, atomically. Each caller gets its own decision back.
 *
 * With leases (settings.leases, on by default; leases.ts) a request of a limit with an input
 * limit is admitted from the worker's lease of its key when that covers it, without a call;
 * otherwise its batch gives the lease's unused tokens back and asks for a new one. An admission
 * the script answers "recalling" (it would fit with the leases out given back) waits for them
 * and is asked again (recall-waits.ts), so no request is refused for tokens a lease holds. A
 * request with several limits (route and tenant) is admitted from the leases of all of them when
 * each covers it; otherwise its call (the admit-all script) asks for the leases that did not.
 *
 * When Redis fails or is slower than the settings' timeout (which bounds each batch call), every
 * operation of the batch rejects with LimitStoreUnavailableError, settles first as in the script;
 * the circuit stays open, without waiting on Redis, until it answers again. What to do then is
 * the failure mode's business (failure-mode.ts wraps this store).
 */
export class RedisStoreLimiter implements TokenLimiter, LateChargeUndo {
  /** Address as shown in logs and errors (credentials hidden). */
  readonly name: string;
  private readonly client: LimiterClient;
  /** Where each script call's bytes are written (one call at a time: written and sent synchronously). */
  private readonly scriptArgs = new ScriptArgs();
  /**
   * The batch script (lua/batch.ts, one key: the limit's) and the admit-all script
   * (lua/admit-all.ts, a key per limit). Made with the limiter, not when the module loads: every
   * worker loads it, and hashing the two scripts took 0.6 ms in a fresh process.
   */
  private readonly batchScript = new LimiterScript(BATCH_LUA);
  private readonly admitAllScript = new LimiterScript(ADMIT_ALL_LUA);
  private readonly health: StoreHealth;
  private readonly onStoreError: ((store: string) => void) | null;
  /** The calls being collected this turn, and the settles waiting for an admission to ride along with. */
  private readonly batches: TurnBatches;
  /** A Redis Cluster: the keys of two limits are in different slots, so no script takes both. */
  private readonly cluster: boolean;
  /** Leases of the windows lent by Redis (RATE_LIMIT_REDIS_LEASES), or null. */
  private readonly leases: RedisLeases | null;
  /** With leases: the refusals for good of the last replies, which refuse again without a call (refusal-notes.ts), or null. */
  private readonly notes: RedisRefusalNotes | null;
  private readonly onLease: ((event: LeaseEvent) => void) | null;
  /** Gives back the leases that are due (idle, stale) while any is held. */
  private leaseTimer: NodeJS.Timeout | null = null;
  /** Admissions waiting to be asked again while leases come back (recall-waits.ts). */
  private readonly waits: RecallWaits<PendingAdmission>;
  private readonly waitsMulti: RecallWaits<PendingMulti>;
  /** The injected clock (tests), or null for the Redis server's. */
  private readonly clock: Clock | null;
  /**
   * This store as the limiter of each limit of an admission decided one limit after the other (a
   * Cluster: admitInOrder), whose give-back of what the limits before a failing one charged goes
   * out whatever the circuit says (giveBackCharged).
   */
  private readonly inOrder: TokenLimiter;
  /** RATE_LIMIT_REDIS_TIMEOUT: the longest a call is waited for (late-reply.ts). */
  private readonly timeoutMs: number;
  /**
   * The `closed` or `local` failure mode: an admission of a call that failed was refused (503) or
   * decided by the local counters, which hold its charge; either way Redis must not keep one.
   */
  private readonly refundLate: boolean;
  /**
   * The `local` failure mode: the output of a settle whose call failed was charged to the local
   * counters (failure-mode.ts), so Redis must not keep it when it runs the call late.
   */
  private readonly outputLocal: boolean;
  /**
   * The `open` failure mode: an admission of a call that failed was admitted without counting; if
   * Redis runs the call late, its charge stays unless the request gives its input back (late-charge.ts).
   */
  private readonly openMode: boolean;
  /** Give-backs of Redis's charges made while it was unavailable, given back once it answers again. */
  private readonly held = new HeldGiveBacks();
  /**
   * On a Redis Cluster (else null), the incarnation of each limit window seen: a give-back goes only
   * to the process that holds the charge (incarnations.ts), as `held` and INFO's run_id do on one Redis.
   */
  private readonly incarnations: Incarnations | null;
  /** Date.now() when the circuit last closed (a connection, or a health PING that answered). */
  private upAt = 0;
  /** Date.now() since when the instance answering now holds the charges: the last `upAt` that found another instance (or none known). */
  private instanceSince = 0;
  /** The circuit closed, and which instance answers is not known yet (INFO pending: readInstance). */
  private confirming = false;
  /** Times the circuit closed (the first connection: 1). Before the first, nothing was charged in Redis. */
  private closures = 0;
  /** The eviction policy of the Redis last read (eviction.ts), null when it evicts nothing; warned once per change. */
  private evicting: string | null = null;
  private readonly log: (message: string, level?: 'warn' | 'error') => void;

  constructor(address: string, settings: RedisLimitSettings, opts: RedisStoreOptions = {}) {
    const target = parseRedisAddress(address, settings.cluster);
    const log = opts.log ?? defaultLog;
    this.name = address.replace(/\/\/[^@/]*@/g, '//***@');
    if (target.hadCredentials) {
      log(`rate limit store ${this.name}: credentials in the address are ignored; set REDIS_USERNAME / REDIS_PASSWORD`, 'warn');
    }
    if (settings.tlsCa !== null && !settings.tls && !target.tls) {
      log(`rate limit store ${this.name}: REDIS_TLS_CA_FILE is set, but this address is reached without TLS (it is not a rediss:// URL, ` +
        'and REDIS_TLS is not true), so the CA file is not used: for TLS, set REDIS_TLS=true or write the address as rediss://host:port', 'warn');
    }
    const clock = opts.clock ?? null;
    this.clock = clock;
    this.inOrder = {
      admit: (key, limit, inputTokens) => this.admit(key, limit, inputTokens),
      admitAll: (terms, inputTokens) => this.admitAll(terms, inputTokens),
      chargeOutput: (key, limit, outputTokens) => this.chargeOutput(key, limit, outputTokens),
      adjustInput: (key, limit, delta, _byFailureMode, admittedAt, window) => this.giveBackCharged(key, limit, delta, admittedAt, window),
      close: () => Promise.resolve(),
    };
    this.cluster = settings.cluster;
    this.timeoutMs = settings.timeoutMs;
    this.refundLate = settings.failureMode === 'closed' || settings.failureMode === 'local';
    this.outputLocal = settings.failureMode === 'local';
    this.openMode = settings.failureMode === 'open';
    this.incarnations = settings.cluster ? new Incarnations() : null;
    this.log = log;
    this.onStoreError = opts.onStoreError ?? null;
    this.batches = new TurnBatches(clock, opts.settleWaitMs ?? SETTLE_WAIT_MS, (b) => this.send(b), (b) => this.sendMulti(b));
    this.onLease = opts.onLease ?? null;
    const onRecallWait = opts.onRecallWait ?? null;
    const maxWaits = recallWaits(settings.recallWaitMs);
    this.waits = new RecallWaits<PendingAdmission>(this.askAgain((a) => this.batches.batchFor(a.key, a.limit, true).join(a)), maxWaits, onRecallWait);
    this.waitsMulti = new RecallWaits<PendingMulti>(this.askAgain((a) => this.batches.multiBatchFor(a.terms).join(a)), maxWaits, onRecallWait);
    this.leases = settings.leases ? new RedisLeases(clock ?? (() => performance.now()), this.onLease) : null;
    this.notes = settings.leases ? new RedisRefusalNotes(clock ?? (() => performance.now())) : null;
    this.client = createLimiterClient(target, settings, {
      reconnectCapMs: opts.reconnectCapMs ?? DEFAULT_TUNING.reconnectCapMs,
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_TUNING.connectTimeoutMs,
    });
    this.health = new StoreHealth(this.client, {
      name: this.name,
      failureMode: settings.failureMode,
      tls: settings.tls || target.tls,
      timeoutMs: settings.timeoutMs,
      probeIntervalMs: opts.probeIntervalMs ?? 500,
      log,
      // However the store went away (a lost connection too), its leases go back or are forfeit at
      // once (returnLeasesWhileDown): one must not outlive a reconnection to a Redis that may have
      // lost its counts (a restart, a failover), whatever the lease clock says of its view.
      // What was collected fails over now too: a settle waiting for an admission to ride along
      // with must not go out after a reconnection, to an instance that may not hold its charge
      // (its give-back was meant for the one answering when it was made: held for it instead).
      onDown: () => {
        this.returnLeasesWhileDown();
        this.batches.flushAll();
      },
      onUp: () => this.readInstance(),
      // Before any script runs on a connection: a script Redis refuses part-way keeps what it wrote
      // before the refused command (keys without their expiry, when PEXPIRE is refused).
      // And on the database its address names: a refused SELECT leaves the connection on database 0.
      check: async () => {
        const notSelected = await databaseRefusal(this.client, target.db);
        if (notSelected !== null) {
          return `rate limit store ${this.name}: cannot use database ${target.db} (${notSelected}); failure mode "${settings.failureMode}" applies, ` +
            `and no script runs, until it can: the limiter never counts in another database than its address names`;
        }
        const refused = await refusedScriptCommands(this.client);
        return refused.length === 0 ? null : aclRefusalLine(this.name, settings.username ?? 'default', refused, settings.failureMode, settings.cluster);
      },
      // Counted as a refused script call would be.
      onCheckError: () => {
        if (this.onStoreError !== null) this.onStoreError(this.name);
      },
      // Counted as the failed calls are: a Redis unreachable from the start, or refusing the
      // credentials, fails no call (none goes out) but every connection attempt.
      onConnectionError: () => {
        if (this.onStoreError !== null) this.onStoreError(this.name);
      },
    });
  }

  get state(): StoreState {
    return this.health.state;
  }

  /** StoreHealth.decides. */
  get decides(): boolean {
    return this.health.decides;
  }

  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    const invalid = tokenCountError(inputTokens, 'input tokens');
    if (invalid !== null) return Promise.reject(invalid);
    if (this.health.state === 'up') {
      if (this.leases !== null) {
        if (limit.inputTokensPerUnit !== null) return this.admitLeased(key, limit, inputTokens);
        // An output-only limit holds no lease; one whose output limit is reached is refused from its note.
        const refused = this.notes!.size > 0 ? this.notes!.refuse(key, limit, inputTokens) : null;
        if (refused !== null) return refused;
      }
      return this.enqueueAdmission(key, limit, inputTokens);
    }
    this.returnLeasesWhileDown();
    return this.admitOnceUsable(key, limit, inputTokens);
  }

  /**
   * From the key's lease when it covers the request; else refused from the key's refusal note when
   * that refuses it (refusal-notes.ts); else the request goes to Redis with the lease's unused
   * tokens given back and a new lease asked for (leases.ts).
   */
  private admitLeased(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    const leases = this.leases!;
    const d = leases.admit(key, limit, inputTokens);
    if (d !== null) return d;
    const notes = this.notes!;
    if (notes.size > 0) {
      const refused = notes.refuse(key, limit, inputTokens);
      if (refused !== null) return refused;
    }
    const b = this.batches.batchFor(key, limit, true);
    const back = leases.takeBack(key);
    if (back !== null) this.giveBack(back); // into this batch, unless the lease was lent under another unit
    if (b.lease === 0) b.lease = RedisLeases.ask(inputTokens);
    return b.admit(limit, inputTokens);
  }

  /** Admissions that waited for leases join this turn's batches again (`join`), or fail when the store is down. */
  private askAgain<T extends { reject(err: unknown): void }>(join: (a: T) => void): (admissions: readonly T[]) => void {
    return (admissions) => {
      for (const a of admissions) {
        if (this.health.state === 'up') join(a);
        else a.reject(new LimitStoreUnavailableError(this.name));
      }
    };
  }

  /** Gives back the leases that are due; stops checking when none is held. */
  private readonly returnDueLeases = (): void => {
    const leases = this.leases!;
    for (const r of leases.due()) this.giveBack(r);
    if (leases.size === 0 && this.leaseTimer !== null) {
      clearInterval(this.leaseTimer);
      this.leaseTimer = null;
    }
  };

  /**
   * A lease's unused tokens go back with the next call of its key and unit (an admission, or settles
   * within settleWaitMs), or in `into`: a slot, of that key and unit, of a call being collected.
   */
  private giveBack(r: LeaseReturn, into: LeaseSlot | null = null): void {
    if (this.health.state !== 'up') {
      this.returnWhileDown(r);
      return;
    }
    if (this.onLease !== null) this.onLease('given_back');
    const slot = into ?? this.batches.batchFor(r.key, r.limit, false);
    this.expect(slot, redisKeyBase(r.key), r.limit.unit);
    giveBackInto(slot, r);
  }

  /** Every lease held (if any) goes back, or is forfeit, while the store is unavailable (returnWhileDown). */
  private returnLeasesWhileDown(): void {
    if (this.notes !== null && this.notes.size > 0) this.notes.clear();
    if (this.leases === null || this.leases.size === 0) return;
    for (const r of this.leases.takeAll()) this.returnWhileDown(r);
  }

  /**
   * A lease's unused tokens while the store is unavailable (no batch goes out): when the connection
   * still stands (Redis stalled past the timeout), they go back in a call of their own, which the
   * same server, still counting the lease, runs when it goes on (the script takes them only in the
   * window they were lent in); otherwise (a lost connection: the Redis it comes back to may have
   * lost its counts, a restart or a failover) they are forfeit and stay counted.
   */
  private returnWhileDown(r: LeaseReturn): void {
    if (this.client.status !== 'ready') {
      if (this.onLease !== null) this.onLease('forfeited');
      return;
    }
    const base = redisKeyBase(r.key);
    this.correct(base, r.limit.unit, clockArgument(this.clock), 0, 0, r.tokens, r.window, r.lent, this.expectedNow(base, r.limit.unit)).then(this.leaseReturned, this.leaseLost);
  }

  private readonly leaseReturned = (): void => {
    if (this.onLease !== null) this.onLease('given_back');
  };

  private readonly leaseLost = (): void => {
    if (this.onLease !== null) this.onLease('forfeited');
  };

  /** Gives a lease back in a call now, or in this turn's batch of its key when that has an admission. */
  private giveBackNow(r: LeaseReturn): void {
    this.giveBack(r);
    this.batches.sendUnlessAdmitting(r.key, r.limit.unit);
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> {
    return this.settle(key, limit, 0, outputTokens);
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number, _byFailureMode = false, admittedAt = 0, window = -1): Promise<void> {
    return this.settle(key, limit, delta, 0, false, admittedAt, window);
  }

  /**
   * adjustInput + chargeOutput in one operation (batched with the turn's other operations). A
   * give-back goes only to the instance that charged it (givenBackTo); the input correction only
   * to `window`, the window its admission was charged in (Decision.window; -1: not known, the
   * current one), which the script checks by its own clock.
   */
  settle(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, _byFailureMode = false, admittedAt = 0, window = -1): Promise<void> {
    const invalid = tokenDeltaError(inputDelta, 'input token adjustment') ?? tokenCountError(outputTokens, 'output tokens');
    if (invalid !== null) return Promise.reject(invalid);
    if (inputDelta < 0 && admittedAt > 0 && admittedAt < this.upAt) inputDelta = this.givenBackTo(key, limit, inputDelta, admittedAt, window);
    if (inputDelta < 0 && this.incarnations !== null && !this.incarnations.keeps(redisKeyBase(key), limit.unit, admittedAt)) inputDelta = 0;
    if (inputDelta === 0 && outputTokens === 0) return Promise.resolve();
    if (inputDelta < 0 && this.notes !== null) this.notes.forget(key); // its own give-back reaches Redis before its next request's admission
    if (this.health.state === 'up') return this.enqueueSettle(key, limit, inputDelta, outputTokens, window);
    return this.settleOnceUsable(key, limit, inputDelta, outputTokens, window);
  }

  /**
   * A give-back (`delta` < 0) of an admission begun at `admittedAt`, before the circuit last closed:
   * what still goes to Redis now. Nothing when an instance before the one answering now charged it
   * (Redis restarted or failed over since: taking it off would lower the counts of others'
   * requests); held (held-give-backs.ts) while which instance answers is not known yet; else all.
   * Not on a Cluster (no instance is read there: each limit window's incarnation says it, incarnations.ts).
   */
  private givenBackTo(key: LimitKey, limit: RateLimitSpec, delta: number, admittedAt: number, window: number): number {
    if (this.incarnations !== null) return delta;
    if (admittedAt < this.instanceSince) return 0;
    if (!this.confirming) return delta;
    this.hold(redisKeyBase(key), limit.unit, -delta, '', window);
    return 0;
  }

  /**
   * One admission against several limits of this store (limiter.ts admitAll), decided atomically:
   * from the worker's leases when every limit has one that covers it (leases.ts admitAll), else
   * in one call of the admit-all script (lua/admit-all.ts) shared by the turn's admissions under
   * the same limits, which asks for a lease of each limit whose lease did not cover it (giving the
   * old one back). On a Redis Cluster the limits' keys are in different slots: decided one after
   * the other, with the refund of admit-all.ts admitInOrder (through `inOrder`).
   */
  admitAll(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
    const invalid = tokenCountError(inputTokens, 'input tokens');
    if (invalid !== null) return Promise.reject(invalid);
    if (this.cluster && terms.length > 1) return admitInOrder(terms.map((t) => ({ key: t.key, limit: t.limit, limiter: this.inOrder })), inputTokens);
    if (this.health.state !== 'up') {
      this.returnLeasesWhileDown();
      return this.admitAllOnceUsable(terms, inputTokens);
    }
    if (this.leases === null) return this.batches.multiBatchFor(terms).admit(terms, inputTokens);
    return this.leases.admitAll(terms, inputTokens) ?? (this.notes!.size > 0 ? this.notes!.refuseAll(terms, inputTokens) : null) ?? this.admitAllLeased(terms, inputTokens);
  }

  /**
   * Not covered by the leases held: the turn's multi-limit batch decides it, with a lease asked
   * for each leasable limit whose lease here does not cover it (that lease's unused tokens go back
   * in the same call); a lease that covers it stays.
   */
  private admitAllLeased(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> {
    const leases = this.leases!;
    const b = this.batches.multiBatchFor(terms);
    for (let j = 0; j < terms.length; j++) {
      const t = terms[j];
      if (isShadow(t.limit) || t.limit.inputTokensPerUnit === null || leases.covers(t.key, t.limit, inputTokens)) continue;
      const back = leases.takeBack(t.key);
      const slot = b.slots[j];
      // In this call; a lease lent under another unit goes back with a call of that unit.
      if (back !== null) this.giveBack(back, back.limit.unit === t.limit.unit ? slot : null);
      if (slot.lease === 0) slot.lease = RedisLeases.ask(inputTokens);
    }
    return b.admit(terms, inputTokens);
  }

  /**
   * Gives back `-delta` input tokens that an admission of `key` charged a moment ago (admitInOrder:
   * a later limit refused, or its call failed). When the failure opened the circuit (on a Cluster,
   * another node's limit timed out), the store would refuse the give-back and the charge would stay
   * in Redis for the rest of the window, for a request the failure mode decided (503 in `closed`
   * mode); it goes out in a call of its own instead, whatever the circuit says, as a late reply's
   * undoing does (the node that charged it answered a moment ago), not waited for; a failure loses it.
   */
  private giveBackCharged(key: LimitKey, limit: RateLimitSpec, delta: number, admittedAt = 0, window = -1): Promise<void> {
    if (this.health.state === 'up' || delta >= 0) return this.adjustInput(key, limit, delta, false, admittedAt, window);
    const base = redisKeyBase(key);
    if (this.incarnations !== null && !this.incarnations.keeps(base, limit.unit, admittedAt)) return Promise.resolve();
    // Not waited for: the request's failure mode decides now, not once that node answers.
    this.correct(base, limit.unit, clockArgument(this.clock), delta, 0, 0, 0, 0, this.expectedNow(base, limit.unit), window).then(ignore, ignore);
    return Promise.resolve();
  }

  private async admitAllOnceUsable(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> {
    if (!(await this.usable())) throw new LimitStoreUnavailableError(this.name);
    return this.batches.multiBatchFor(terms).admit(terms, inputTokens);
  }

  private sendMulti(b: MultiBatch): void {
    if (this.health.state !== 'up') {
      b.fail(new LimitStoreUnavailableError(this.name));
      return;
    }
    if (this.incarnations !== null) for (const slot of b.slots) slot.incarnation ??= NO_INCARNATION;
    /** `open` mode, the call failed: what Redis may still charge of each admission (late-charge.ts). */
    let inDoubt: InDoubtCharge[] | null = null;
    awaitReply(sendScript(this.client, this.admitAllScript, b.writeArgs(this.scriptArgs.begin())), this.timeoutMs, {
      reply: (bytes) => {
        const reply = this.replyOf(bytes, b.terms.length * PER_LIMIT, b.terms.length * b.admissions.length);
        if (reply === null) {
          b.fail(new LimitStoreUnavailableError(this.name));
          return;
        }
        this.health.answered();
        this.sawMulti(b, reply);
        if (this.leases !== null) {
          this.leaseReplyMulti(b, reply);
          this.notes!.fromMultiReply(b, reply);
        }
        b.answer(reply, this.waitsMulti);
      },
      fail: (err) => {
        this.storeFailed(err);
        if (this.openMode) inDoubt = failMultiInDoubt(b, this, this.name);
        else b.fail(new LimitStoreUnavailableError(this.name));
      },
      late: (bytes) => {
        const reply = lateReply(bytes, b.terms.length * PER_LIMIT, b.terms.length * b.admissions.length);
        if (reply === null) return;
        this.sawMulti(b, reply);
        const ids = b.terms.map((_, j) => this.incarnationOf(reply[j * PER_LIMIT + MULTI_INCARNATION]));
        if (inDoubt !== null) {
          let msLeft = Infinity;
          for (let j = 0; j < b.terms.length; j++) msLeft = Math.min(msLeft, reply[j * PER_LIMIT + MULTI_MS]);
          for (let i = 0; i < inDoubt.length; i++) inDoubt[i].ranLate(b.admitted(reply, i), msLeft, this.timeoutMs, ids);
        }
        // Every limit was charged the input of each admission admitted (shadow ones too).
        const refund = this.refundLate ? b.admittedTokens(reply) : 0;
        for (let j = 0; j < b.terms.length; j++) {
          const at = j * PER_LIMIT;
          this.undoLate(b.base(j), b.terms[j].limit.unit, b.now, reply[at + MULTI_LEASE], reply[at + MULTI_WINDOW], refund, 0, reply[at + MULTI_MS], ids[j]);
        }
      },
    });
  }

  /** Closes the Redis client. */
  async close(): Promise<void> {
    this.waits.close(); // admissions waiting for leases are decided now, without waiting more
    this.waitsMulti.close();
    if (this.leases !== null) {
      for (const r of this.leases.takeAll()) this.giveBack(r);
      if (this.leaseTimer !== null) clearInterval(this.leaseTimer);
      this.leaseTimer = null;
    }
    this.batches.flushAll(); // what was collected goes out (or fails over) before the client closes
    this.health.close();
    // QUIT waits no longer than a request would (the client keeps a command longer: late-reply.ts).
    if (this.client.status === 'ready' && (await answeredWithin(this.client.quit(), this.timeoutMs))) return;
    this.client.disconnect();
  }

  /** Waits (bounded by the timeout) for the first connection; false when Redis is not usable now. */
  private async usable(): Promise<boolean> {
    const settled = this.health.startupSettled();
    if (settled !== null) await settled;
    return this.health.state === 'up';
  }

  private async admitOnceUsable(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    if (!(await this.usable())) throw new LimitStoreUnavailableError(this.name);
    return this.enqueueAdmission(key, limit, inputTokens);
  }

  private async settleOnceUsable(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, window: number): Promise<void> {
    if (!(await this.usable())) {
      if (inputDelta < 0) {
        const base = redisKeyBase(key);
        this.hold(base, limit.unit, -inputDelta, this.expectedNow(base, limit.unit), window);
      }
      throw new LimitStoreUnavailableError(this.name);
    }
    await this.enqueueSettle(key, limit, inputDelta, outputTokens, window);
  }

  /** Joins this turn's batch of the key; the batch goes out when the turn ends. */
  private enqueueAdmission(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    return this.batches.batchFor(key, limit, true).admit(limit, inputTokens);
  }

  /**
   * Joins the key's pending batch. A batch of settles alone waits for an admission of its key to
   * ride along with, at most the settle wait, then goes out on its own (turn-batches.ts).
   */
  private enqueueSettle(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, window: number): Promise<void> {
    const b = this.batches.batchFor(key, limit, false, inputDelta !== 0 ? window : null);
    if (inputDelta < 0) this.expect(b, b.base, b.unit);
    return b.settle(limit, inputDelta, outputTokens, window);
  }

  /**
   * A give-back joins `slot` (a call of `base`'s limit of `unit` being collected): on a Cluster, the
   * call expects the incarnation seen now, unless an earlier give-back of it set one (a later reply
   * showing another one must not make the script take what was charged before it).
   */
  private expect(slot: { incarnation: string | null }, base: string, unit: WindowUnit): void {
    if (this.incarnations !== null && slot.incarnation === null) slot.incarnation = this.incarnations.expected(base, unit);
  }

  /** The incarnation a give-back of `base`'s limit of `unit` expects now: '' on a plain Redis (none kept). */
  private expectedNow(base: string, unit: WindowUnit): string {
    return this.incarnations === null ? '' : this.incarnations.expected(base, unit);
  }

  /** A reply's incarnation as a give-back expects it ('' on a plain Redis). */
  private incarnationOf(id: number): string {
    return this.incarnations === null ? '' : String(id);
  }

  /**
   * On a Cluster, a reply shows the incarnation of the window of `key`'s limit of `unit`; when it
   * replaced one seen before (the node restarted empty), the lease held of that key is forfeit: the
   * counts it was lent from are gone, and its unused tokens must not be taken off the new ones.
   */
  private saw(key: LimitKey, base: string, unit: WindowUnit, window: number, id: number, msLeft: number): void {
    if (this.incarnations === null) return;
    if (!this.incarnations.saw(base, unit, window, String(id), msLeft, Date.now()) || this.leases === null) return;
    this.notes!.forget(key);
    if (this.leases.takeBack(key) !== null && this.onLease !== null) this.onLease('forfeited');
  }

  private sawMulti(b: MultiBatch, reply: readonly number[]): void {
    if (this.incarnations === null) return;
    for (let j = 0; j < b.terms.length; j++) {
      const at = j * PER_LIMIT;
      this.saw(b.terms[j].key, b.base(j), b.terms[j].limit.unit, reply[at + MULTI_WINDOW], reply[at + MULTI_INCARNATION], reply[at + MULTI_MS]);
    }
  }

  private send(b: Batch): void {
    if (this.health.state !== 'up') {
      // Its give-backs in full: a positive correction summed with them is dropped, not set against them.
      if (b.givenBack > 0) this.hold(b.base, b.unit, b.givenBack, b.incarnation ?? this.expectedNow(b.base, b.unit), b.correctionWindow ?? -1);
      this.withoutStore(b);
      return;
    }
    const incarnation = this.incarnations === null ? '' : b.incarnation ?? NO_INCARNATION;
    const call = this.batchCall(b.base, b.unit, b.now, b.inputDelta, b.outputTokens, b.inLimit, b.outLimit, b.lease, b.back, b.backWindow, b.backLent, incarnation, b.givenBack, b.correctionWindow ?? -1, b.tokens);
    /** `open` mode, the call failed: what Redis may still charge of each admission (late-charge.ts). */
    let inDoubt: InDoubtCharge[] | null = null;
    awaitReply(call, this.timeoutMs, {
      reply: (bytes) => {
        const reply = this.replyOf(bytes, FIRST_STATUS, b.tokens.length);
        if (reply === null) {
          this.withoutStore(b);
          return;
        }
        this.health.answered();
        this.saw(b.key, b.base, b.unit, reply[REPLY_WINDOW], reply[REPLY_INCARNATION], reply[REPLY_MS]);
        if (this.leases !== null) {
          this.leaseReply(b, reply);
          this.notes!.fromReply(b, reply);
        }
        b.answer(reply, this.waits);
      },
      fail: (err) => {
        this.storeFailed(err);
        if (this.openMode && b.admissions.length > 0) inDoubt = failInDoubt(b, this, this.name);
        else this.withoutStore(b);
      },
      late: (bytes) => {
        const reply = lateReply(bytes, FIRST_STATUS, b.tokens.length);
        if (reply === null) return;
        this.saw(b.key, b.base, b.unit, reply[REPLY_WINDOW], reply[REPLY_INCARNATION], reply[REPLY_MS]);
        const ids = [this.incarnationOf(reply[REPLY_INCARNATION])];
        if (inDoubt !== null) {
          for (let i = 0; i < inDoubt.length; i++) inDoubt[i].ranLate(b.admitted(reply, i), reply[REPLY_MS], this.timeoutMs, ids);
        }
        const output = this.outputLocal ? b.outputTokens : 0;
        // Admitted here, but decided by the failure mode (`closed`: refused with 503; `local`: by the
        // local counters, which hold its charge): Redis must not keep it (`open` counted them nowhere else).
        const refund = this.refundLate ? b.admittedTokens(reply) : 0;
        this.undoLate(b.base, b.unit, b.now, reply[REPLY_LEASE], reply[REPLY_WINDOW], refund, output, reply[REPLY_MS], ids[0]);
      },
    });
  }

  /**
   * Undoes what a call the worker stopped waiting for did (Redis stalled past the timeout, then ran
   * it) that nobody asked for in the end, in one call: the lease it lent (`lent`; nobody holds it),
   * all of it back to the window it was lent in (the script ignores it in a later one); and
   * `refund`, the input of admissions it admitted that the failure mode decided instead (`closed`:
   * refused with 503; `local`: decided and, if admitted, charged by the local counters, where the
   * request's corrections go too), and `output`, the output its settles charged that the local
   * counters took instead (`local`: each charge once, where the failure mode put it), both only while
   * that window has more than a timeout left (a refund must not reach the next one).
   * Without this they stayed counted, as used, for the rest of the window. Sent whatever the
   * circuit says: the late reply shows the connection answers; a failure loses it, as before. On a
   * Cluster, only to the window's incarnation the late reply showed (`incarnation`).
   */
  private undoLate(base: string, unit: WindowUnit, now: string, lent: number, window: number, refund: number, output: number, msLeft: number, incarnation: string): void {
    const inWindow = msLeft > this.timeoutMs;
    const delta = refund > 0 && inWindow ? -refund : 0;
    const outDelta = output > 0 && inWindow ? -output : 0;
    if (lent <= 0 && delta === 0 && outDelta === 0) return;
    this.correct(base, unit, now, delta, outDelta, lent, window, lent, incarnation, window).then(undefined, ignore);
  }

  /**
   * A script call of its own, outside the turn's batches and whatever the circuit says, with no
   * admission: `delta` input tokens and `output` output tokens (< 0: taken back, floored at 0) to
   * the window at `now`, and `back` tokens of a lease of `lent` lent in `window` given back (the
   * script takes them only in that window); on a Cluster, the taking back and the lease only if the
   * window's incarnation is `incarnation` ('' on a plain Redis). `deltaWindow`: the window `delta`
   * belongs to (-1: the current one; in another, the script applies none of it).
   */
  private correct(base: string, unit: WindowUnit, now: string, delta: number, output: number, back: number, window: number, lent: number, incarnation: string, deltaWindow = -1): Promise<unknown> {
    return this.batchCall(base, unit, now, delta, output, NO_LIMIT, NO_LIMIT, 0, back, window, lent, incarnation, delta < 0 ? -delta : 0, deltaWindow, NO_ADMISSIONS);
  }

  /**
   * One call of the batch script (lua/batch.ts) on the limit whose keys start `base`: the summed
   * input correction and output charge, the two limits (-1 = none), a lease asked for, the unused
   * tokens of leases given back (with the start of the window they were lent in and their size
   * when lent), the window's incarnation the give-backs expect ('' on a plain Redis), the input
   * tokens of the give-backs in the correction, the start of the window the correction belongs to
   * (-1: not known), then the input tokens of each admission. Its reply's bytes (script-reply.ts).
   */
  private batchCall(
    base: string, unit: WindowUnit, now: string, inputDelta: number, outputTokens: number, inLimit: number, outLimit: number,
    lease: number, back: number, backWindow: number, backLent: number, incarnation: string, givenBack: number, correctionWindow: number, tokens: readonly number[],
  ): Promise<Buffer> {
    const a = this.scriptArgs.begin().key(base).str(unit).str(now).num(inputDelta).num(outputTokens).num(inLimit).num(outLimit);
    a.num(lease).num(back).num(backWindow).num(backLent).str(incarnation).num(givenBack).num(correctionWindow).nums(tokens);
    return sendScript(this.client, this.batchScript, a);
  }

  /** The injected clock's time, else this machine's, ms (the windows of held give-backs). */
  private nowMs(): number {
    return this.clock === null ? Date.now() : this.clock();
  }

  /**
   * Holds a give-back of `tokens` input tokens that Redis charged and cannot take now (no call went
   * out: the circuit is open), to send once it answers again (held-give-backs.ts); on a Cluster, to
   * the window's `incarnation` it expects ('' on one Redis).
   */
  private hold(base: string, unit: WindowUnit, tokens: number, incarnation: string, window = -1): void {
    this.held.hold(base, unit, this.nowMs(), tokens, incarnation, window);
  }

  /**
   * The circuit closed: which instance answers (INFO's `run_id`), then the give-backs held for it
   * go out, each in a call of its own; those of another instance or of a window over are dropped.
   * On a Cluster no instance is read: each goes out expecting its window's incarnation, which the
   * node that owns its slot checks (a node that restarted empty takes none of them).
   */
  private readInstance(): void {
    const held = this.held;
    if (this.incarnations !== null) {
      this.sendHeld(held, CLUSTER_INSTANCE);
      return;
    }
    this.upAt = Date.now();
    // At the first connection no instance came before: nothing to confirm.
    this.confirming = ++this.closures > 1;
    // Not bounded by the store's timeout: the reply says which instance answers this connection
    // (another instance means another connection), however late it comes; until it does, the
    // give-backs it decides are held. A reply later than the client's own command timeout
    // (late-reply.ts), an error (INFO denied by an ACL) or the connection's close fails it: the
    // instance counts as unknown. Only the read of the last closure decides.
    const closure = this.closures;
    this.client.info('server').then(
      (text) => {
        if (closure === this.closures) this.giveBackHeld(held, runIdOf(text));
      },
      (err: unknown) => {
        if (closure !== this.closures) return;
        this.log(`rate limit store ${this.name}: which Redis process answers could not be read (INFO server: ${err instanceof Error ? err.message : String(err)}); give-backs of requests admitted before it answered again are dropped`, 'warn');
        this.giveBackHeld(held, null);
      },
    );
    // Whether it may evict the limits' counts; a failure (INFO refused) was just logged above.
    this.client.info('memory').then((text) => this.checkEviction(text), ignore);
  }

  /** A warn line when the Redis answering may evict the limits' counts (eviction.ts): once per policy seen. */
  private checkEviction(info: string): void {
    const policy = evictingPolicy(info);
    if (policy === this.evicting) return;
    this.evicting = policy;
    if (policy !== null) this.log(evictionWarning(this.name, policy), 'warn');
  }

  private giveBackHeld(held: HeldGiveBacks, runId: string | null): void {
    // Another instance (or none known): the charges of admissions made before it answered are not its.
    // At the first connection there is none before it: an admission that began while the store was
    // starting (waiting for it) was charged by this instance, or by none.
    if (this.closures > 1 && (runId === null || runId !== held.runId)) this.instanceSince = this.upAt;
    this.confirming = false;
    this.sendHeld(held, runId);
  }

  /** The give-backs held for `runId` go out, each in a call of its own; the others are dropped (one log line). */
  private sendHeld(held: HeldGiveBacks, runId: string | null): void {
    for (const h of held.takeFor(runId, this.nowMs(), this.timeoutMs)) {
      this.correct(h.base, h.unit, clockArgument(this.clock), -h.tokens, 0, 0, 0, 0, h.incarnation, h.charged).then(ignore, ignore);
    }
    const dropped = held.takeDropped();
    if (dropped > 0) this.log(`rate limit store ${this.name}: ${dropped} input tokens of give-backs made while it was unavailable were dropped (their window ended, or Redis restarted or failed over)`);
  }

  /**
   * A reply refreshes the key's lease or brings a new one (checked for return from then on); a
   * lease it recalls, or one lent while another is held, goes back at once in a call of its own
   * when no admission of the key is pending this turn to take it.
   */
  private leaseReply(b: Batch, reply: readonly number[]): void {
    const back = this.leases!.fromReply(b.key, b, reply);
    if (back !== null) this.giveBackNow(back);
    this.checkLeases();
  }

  /** The same for each limit of an admit-all reply (shadow limits and limits without an input limit hold no lease). */
  private leaseReplyMulti(b: MultiBatch, reply: readonly number[]): void {
    const leases = this.leases!;
    const admitted = b.admittedTokens(reply);
    for (let j = 0; j < b.terms.length; j++) {
      const t = b.terms[j];
      if (isShadow(t.limit) || t.limit.inputTokensPerUnit === null) continue;
      const at = j * PER_LIMIT;
      const lent = reply[at + MULTI_LEASE];
      const back = leases.fromCounts(t.key, b.slots[j].lease > 0 ? t.limit : null, t.limit.unit, {
        inUsed: reply[at + MULTI_IN_USED] + admitted + lent, outUsed: reply[at + MULTI_OUT_USED], lent, window: reply[at + MULTI_WINDOW],
        recall: reply[at + MULTI_RECALL] === 1, leasesOut: reply[at + MULTI_LEASES_OUT], msLeft: reply[at + MULTI_MS],
      });
      if (back !== null) this.giveBackNow(back);
    }
    this.checkLeases();
  }

  /** While a lease is held, the ones that are due go back (checked every LEASE_IDLE_MS / 2). */
  private checkLeases(): void {
    if (this.leases!.size > 0 && this.leaseTimer === null) {
      this.leaseTimer = setInterval(this.returnDueLeases, LEASE_IDLE_MS / 2);
      this.leaseTimer.unref();
    }
  }

  /**
   * A script's reply read as its numbers (script-reply.ts), or null when it is malformed: the store
   * then counts as failed, as for an error of the call, and the caller fails the call's operations.
   */
  private replyOf(bytes: Buffer, fields: number, statuses: number): number[] | null {
    try {
      return parseScriptReply(bytes, fields, statuses);
    } catch (err) {
      this.storeFailed(err);
      return null;
    }
  }

  /** `err` a ReplyError: Redis answered the call with an error (OOM, NOPERM, BUSY, ...); else it did not answer. */
  private storeFailed(err: unknown): void {
    this.returnLeasesWhileDown();
    this.health.markDown((err as Error).message, (err as Error).name === 'ReplyError');
    if (this.onStoreError !== null) this.onStoreError(this.name);
  }

  /** Corrects (or, given back, undoes) a charge Redis made late of an admission the `open` mode admitted (late-charge.ts). */
  correctLateCharge(c: InDoubtCharge, delta: number): void {
    for (let j = 0; j < c.bases.length; j++) this.correct(c.bases[j], c.units[j], c.now, delta, 0, 0, 0, 0, c.incarnations[j] ?? '').then(undefined, ignore);
  }

  /** A batch Redis did not take: each operation fails, settles first as in the script. */
  private withoutStore(b: Batch): void {
    const err = new LimitStoreUnavailableError(this.name);
    for (const s of b.settles) s.reject(err);
    for (const a of b.admissions) a.reject(err);
  }
}

function defaultLog(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** A late reply's numbers, or null when malformed (nothing waits for it: no failure to report). */
function lateReply(bytes: Buffer, fields: number, statuses: number): number[] | null {
  try {
    return parseScriptReply(bytes, fields, statuses);
  } catch {
    return null;
  }
}

const NO_ADMISSIONS: readonly number[] = [];

/** What stands for the instance of a Redis Cluster in the held give-backs: one for every node (their incarnations tell the processes apart). */
const CLUSTER_INSTANCE = 'cluster';

function ignore(): void {}
