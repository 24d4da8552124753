import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { newRequestId } from '../common/ids';
import { providerOfCircuit } from '../config/accounts';
import { EnvironmentVariables } from '../config/env.schema';
import { requestFields } from '../config/logging';
import { tracing } from '../tracing/tracing';
import { PgChangeFeed } from '../database/pg-change-feed';
import { AdapterRegistry } from '../providers/adapter-registry';
import { BreakerStore } from './breaker.store';
import { BreakerState, BreakerView, CircuitBreaker, combinedView } from './circuit-breaker';
import { CIRCUITS_CHANNEL, CircuitMirrors } from './circuit-mirrors';
import { EventsService } from './events.service';

export { CIRCUITS_CHANNEL } from './circuit-mirrors';
const PROBE_TIMEOUT_MS = 5000;
/** The cheap probe holds the trial slot this long at most (its own timeout, and a margin). */
const PROBE_HOLD_MS = 2 * PROBE_TIMEOUT_MS;
/** A trial request holds the slot this long at most (a whole cooldown if longer): past it, its replica is taken for dead. */
const TRIAL_HOLD_MIN_MS = 60000;
/** A request waits this long at most for its trial claim (a slow database): past it, it skips the provider. */
const CLAIM_WAIT_MS = 500;

/** The half-open trial this replica holds: a real request's (`requestId`) or the cheap probe's (null). */
interface Trial {
  requestId: string | null;
  /** The hold's end written by the claim (null while the claim is being written): identifies the claim in the row. */
  token: number | null;
  started: number;
}

/**
 * The circuit of every provider, shared by all keys and replicas. Requests read memory only;
 * outcomes that change a circuit are written after the response, coalesced and compare-and-set,
 * with the pure CircuitBreaker deciding every transition. A healthy provider's success writes nothing.
 */
@Injectable()
export class CircuitRegistry implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(CircuitRegistry.name);
  readonly breaker: CircuitBreaker;
  private readonly mirrors: CircuitMirrors;
  /** The trials this replica holds or is claiming, by provider. */
  private readonly trials = new Map<string, Trial>();
  private syncTimer: NodeJS.Timeout | null = null;
  /** Aborted at shutdown: no new trial, probe or sync starts, and a probe in flight is dropped unrecorded. */
  private readonly closing = new AbortController();
  /** Probes and trial verdicts being written, waited for at shutdown. */
  private readonly probesInFlight = new Set<Promise<void>>();

  constructor(
    store: BreakerStore,
    private readonly feed: PgChangeFeed,
    private readonly adapters: AdapterRegistry,
    private readonly events: EventsService,
    private readonly env: EnvironmentVariables,
  ) {
    this.breaker = new CircuitBreaker(env.SVC_BREAKER_THRESHOLD, env.SVC_BREAKER_COOLDOWN_MS);
    this.mirrors = new CircuitMirrors(store, feed, this.breaker, this.logger);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.sync();
    await this.feed.subscribe(CIRCUITS_CHANNEL, () => void this.sync());
    this.syncTimer = setInterval(() => void this.sync(), this.env.SVC_SYNC_INTERVAL_MS);
    this.syncTimer.unref();
  }

  /** Writes the outcomes seen here before the database closes (they would be lost with this replica). */
  async onApplicationShutdown(): Promise<void> {
    this.closing.abort();
    if (this.syncTimer) clearInterval(this.syncTimer);
    while (this.probesInFlight.size > 0) await Promise.allSettled([...this.probesInFlight]);
    await this.flushAll();
    this.mirrors.stop();
  }

  /**
   * Whether regular traffic may use the provider (or one account's circuit, `provider/account`) now (a read: claims
   * nothing). A provider with accounts is available while one of its accounts is.
   */
  isAvailable(provider: string, now = Date.now()): boolean {
    const pool = this.adapters.pool(provider);
    if (pool) return pool.slots.some((slot) => this.breaker.isAvailable(this.mirrors.get(slot.circuit).state, now));
    return this.breaker.isAvailable(this.mirrors.get(provider).state, now);
  }

  /**
   * Whether request `requestId` may use the provider: regular traffic, or the half-open trial, which it
   * claims (one across all replicas, by compare-and-set; every other request skips the provider meanwhile).
   * Synchronous unless a trial is to be claimed.
   */
  admit(provider: string, requestId: string): boolean | Promise<boolean> {
    const mirror = this.mirrors.get(provider);
    const now = Date.now();
    if (this.breaker.isAvailable(mirror.state, now)) return true;
    if (this.trials.has(provider) || this.closing.signal.aborted || !this.breaker.trialOpen(mirror.state, now))
      return false;
    const hold = Math.max(this.breaker.cooldownMs, TRIAL_HOLD_MIN_MS);
    return this.claim(provider, requestId, hold, (state, at) => this.breaker.trialOpen(state, at));
  }

  /** A circuit's health entry; a provider with accounts: their combined view (decisions §7). */
  view(provider: string, now = Date.now()): BreakerView {
    const pool = this.adapters.pool(provider);
    if (pool) return combinedView(pool.slots.map((slot) => this.view(slot.circuit, now)));
    return this.breaker.view(this.mirrors.get(provider).state, now);
  }

  /** Each account's entry of a provider with accounts (never its key); undefined for one without. */
  accounts(
    provider: string,
    now = Date.now(),
  ):
    | Array<{ name: string; status: BreakerView['status']; in_flight: number; consecutive_failures: number }>
    | undefined {
    return this.adapters.pool(provider)?.slots.map((slot) => {
      const { status, consecutive_failures } = this.view(slot.circuit, now);
      return { name: slot.name, status, in_flight: slot.inFlight, consecutive_failures };
    });
  }

  /** A success of `provider` for request `requestId`: closes the circuit when that request was its trial. */
  recordSuccess(provider: string, requestId?: string): void {
    if (this.settleTrialOf(provider, requestId, 'success')) return;
    const mirror = this.mirrors.get(provider);
    const next = this.breaker.recordSuccess(mirror.state, Date.now());
    if (
      next === mirror.state ||
      (next.status === mirror.state.status && next.consecutiveFailures === mirror.state.consecutiveFailures)
    )
      return;
    const statusChanged = next.status !== mirror.state.status;
    mirror.state = next;
    this.mirrors.queue(provider, mirror, 'success', statusChanged);
  }

  /** A failure of `provider` (seen by request `requestId`, named on the line if it opens the circuit; its trial's failure re-opens it). */
  recordFailure(provider: string, requestId?: string): void {
    if (this.settleTrialOf(provider, requestId, 'failure')) return;
    const mirror = this.mirrors.get(provider);
    const { state, tripped } = this.breaker.recordFailure(mirror.state, Date.now());
    if (state === mirror.state) return;
    const statusChanged = state.status !== mirror.state.status;
    mirror.state = state;
    if (tripped)
      this.logger.warn(
        requestId === undefined ? {} : requestFields(requestId),
        `circuit of ${provider} opened after ${state.consecutiveFailures} consecutive failures`,
      );
    this.mirrors.queue(provider, mirror, 'failure', statusChanged);
  }

  /** Request `requestId` is over: a trial it holds with no verdict (client gone, request refused, step skipped) frees the slot. */
  requestEnded(requestId: string): void {
    if (this.trials.size === 0) return;
    for (const [provider, trial] of this.trials) {
      if (trial.requestId === requestId && trial.token !== null) this.settle(provider, trial, 'release');
    }
  }

  /** Waits until every outcome seen here is in the shared row (tests and shutdown). */
  flushAll(): Promise<void> {
    return this.mirrors.flushAll();
  }

  /** Sends the cheap probe of a circuit that no request tried within CHEAP_PROBE_AFTER_MS of its cooldown's end. */
  @Interval('circuit-probes', 250)
  async probeDueCircuits(): Promise<void> {
    if (this.closing.signal.aborted) return;
    const now = Date.now();
    for (const [provider, mirror] of this.mirrors.entries()) {
      if (this.closing.signal.aborted) return;
      if (this.trials.has(provider) || !this.breaker.cheapProbeDue(mirror.state, now)) continue;
      const run = this.probe(provider);
      this.probesInFlight.add(run);
      await run.finally(() => this.probesInFlight.delete(run));
    }
  }

  /**
   * Claims the trial slot (only the replica whose compare-and-set takes it goes on); false when another
   * holds it. The mirror follows the row either way.
   */
  private async claim(
    provider: string,
    requestId: string | null,
    holdMs: number,
    claimable: (state: BreakerState, now: number) => boolean,
  ): Promise<boolean> {
    const trial: Trial = { requestId, token: null, started: Date.now() };
    this.trials.set(provider, trial);
    const claiming = this.mirrors
      .apply(provider, (state, now) => (claimable(state, now) ? this.breaker.startTrial(state, now, holdMs) : null))
      .catch(() => null);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), CLAIM_WAIT_MS)));
    const claimed = await Promise.race([claiming, late]).finally(() => clearTimeout(timer));
    if (claimed === 'late') {
      // nobody waits for this claim any more: a claim that still wins frees the slot at once
      void claiming.then((won) => {
        if (!won) return void this.trials.delete(provider);
        trial.token = won.state.openUntil;
        this.mirrors.adopt(provider, won);
        this.settle(provider, trial, 'release');
      });
      return false;
    }
    if (!claimed) {
      this.trials.delete(provider);
      return false;
    }
    trial.token = claimed.state.openUntil;
    this.mirrors.adopt(provider, claimed);
    // the others learn of the claim in the background (the compare-and-set already keeps them out)
    void this.feed.notify(CIRCUITS_CHANNEL, provider).catch(() => undefined);
    return true;
  }

  private settleTrialOf(provider: string, requestId: string | undefined, verdict: 'success' | 'failure'): boolean {
    const trial = requestId === undefined ? undefined : this.trials.get(provider);
    if (!trial || trial.requestId !== requestId || trial.token === null) return false;
    this.settle(provider, trial, verdict);
    return true;
  }

  /** Writes a trial's verdict (or the cheap probe's) to the row it claimed; the mirror follows at once. */
  private settle(provider: string, trial: Trial, verdict: 'success' | 'failure' | 'release'): void {
    this.trials.delete(provider);
    const cheap = trial.requestId === null;
    const mine = (state: BreakerState): boolean => state.status === 'recovering' && state.openUntil === trial.token;
    let recovered = false;
    const transform = (state: BreakerState, now: number): BreakerState | null => {
      if (!mine(state)) return null; // the hold ran out and another replica claimed: its verdict counts
      if (verdict === 'release') return this.breaker.releaseTrial(state);
      if (cheap) return this.breaker.recordCheapProbe(state, verdict === 'success', now);
      const result = this.breaker.recordTrial(state, verdict === 'success', now);
      recovered = result.recovered;
      return result.state;
    };
    const mirror = this.mirrors.get(provider);
    // this replica's next request sees the verdict without waiting for the write
    mirror.state = transform(mirror.state, Date.now()) ?? mirror.state;
    const latencyMs = Date.now() - trial.started;
    const requestId = trial.requestId ?? newRequestId();
    // tracing hook: a recovery's deliveries link to the trial request's span (read now, while it is open)
    const traceparent = tracing.on && trial.requestId ? tracing.traceparentOf(trial.requestId) : null;
    const run = this.mirrors
      .apply(provider, (state, now) => transform(state, now))
      .catch(() => null)
      .then(async (written) => {
        if (!written) return;
        this.mirrors.adopt(provider, written);
        if (verdict !== 'release')
          this.logger.log(
            `${cheap ? 'cheap probe' : 'trial request'} of ${provider} ${verdict === 'success' ? 'succeeded' : 'failed'}: circuit ${written.state.status} (${requestId})`,
          );
        // the only record of the recovery: EventsService keeps it in memory and retries until it is stored
        // an account's recovery is its provider's (the keys' chains and the webhooks name providers, decisions §7)
        if (recovered) this.events.recordRecovered(providerOfCircuit(provider), requestId, latencyMs, traceparent);
        await this.feed.notify(CIRCUITS_CHANNEL, provider).catch(() => undefined);
      });
    this.probesInFlight.add(run);
    void run.finally(() => this.probesInFlight.delete(run));
  }

  /** The cheap call (free, 5 s timeout): its failure re-opens the circuit, its success keeps it recovering. */
  private async probe(provider: string): Promise<void> {
    const adapter = this.adapters.get(provider);
    if (!adapter) return;
    if (!(await this.claim(provider, null, PROBE_HOLD_MS, (state, now) => this.breaker.cheapProbeDue(state, now))))
      return;
    const trial = this.trials.get(provider);
    const ok = await adapter.probe(AbortSignal.any([AbortSignal.timeout(PROBE_TIMEOUT_MS), this.closing.signal])).then(
      () => true,
      () => false,
    );
    // cut short by shutdown: the hold runs out, and the next request after it is the trial
    if (this.closing.signal.aborted || !trial) return;
    this.settle(provider, trial, ok ? 'success' : 'failure');
  }

  /** Mirrors rows newer than what this replica holds (NOTIFY, and every sync interval as a safety net). */
  private async sync(): Promise<void> {
    if (!this.closing.signal.aborted) await this.mirrors.sync();
  }
}
