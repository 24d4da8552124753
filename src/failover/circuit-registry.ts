import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { newRequestId } from '../common/ids';
import { EnvironmentVariables } from '../config/env.schema';
import { requestFields } from '../config/logging';
import { PgChangeFeed } from '../database/pg-change-feed';
import { AdapterRegistry } from '../providers/adapter-registry';
import { BreakerStore } from './breaker.store';
import { BreakerState, BreakerView, CircuitBreaker } from './circuit-breaker';
import { EventsService } from './events.service';

export const CIRCUITS_CHANNEL = 'svc_circuits_changed';
const PROBE_TIMEOUT_MS = 5000;
const CAS_ATTEMPTS = 8;
/** How long outcomes that change no circuit's status may wait to share one write. */
const COUNT_WRITE_DELAY_MS = 50;
const FLUSH_ALL_ROUNDS = 5;

type Outcome = 'success' | 'failure';

interface Mirror {
  state: BreakerState;
  version: number;
  /** Outcomes seen here and not yet written to the shared row, in order. */
  pending: Outcome[];
  /** The write in progress, if any. */
  flushing: Promise<void> | null;
  /** A coalesced write scheduled for later (outcomes that change no status), if any. */
  timer: NodeJS.Timeout | null;
  /** A pending outcome changed the status: write without waiting. */
  urgent: boolean;
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
  private readonly mirrors = new Map<string, Mirror>();
  private readonly probing = new Set<string>();
  private syncTimer: NodeJS.Timeout | null = null;
  /** Aborted at shutdown: no new probe or sync starts, and a probe in flight is dropped unrecorded. */
  private readonly closing = new AbortController();
  private readonly probesInFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly store: BreakerStore,
    private readonly feed: PgChangeFeed,
    private readonly adapters: AdapterRegistry,
    private readonly events: EventsService,
    private readonly env: EnvironmentVariables,
  ) {
    this.breaker = new CircuitBreaker(env.SVC_BREAKER_THRESHOLD, env.SVC_BREAKER_COOLDOWN_MS);
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
    await Promise.allSettled([...this.probesInFlight]);
    await this.flushAll();
    this.stopped = true;
  }

  isAvailable(provider: string, now = Date.now()): boolean {
    return this.breaker.isAvailable(this.mirror(provider).state, now);
  }

  view(provider: string, now = Date.now()): BreakerView {
    return this.breaker.view(this.mirror(provider).state, now);
  }

  recordSuccess(provider: string): void {
    const mirror = this.mirror(provider);
    const next = this.breaker.recordSuccess(mirror.state, Date.now());
    if (
      next === mirror.state ||
      (next.status === mirror.state.status && next.consecutiveFailures === mirror.state.consecutiveFailures)
    )
      return;
    const statusChanged = next.status !== mirror.state.status;
    mirror.state = next;
    this.queue(provider, mirror, 'success', statusChanged);
  }

  /** A failure of `provider` (seen by request `requestId`, named on the line if it opens the circuit). */
  recordFailure(provider: string, requestId?: string): void {
    const mirror = this.mirror(provider);
    const { state, tripped } = this.breaker.recordFailure(mirror.state, Date.now());
    if (state === mirror.state) return;
    const statusChanged = state.status !== mirror.state.status;
    mirror.state = state;
    if (tripped)
      this.logger.warn(
        requestId === undefined ? {} : requestFields(requestId),
        `circuit of ${provider} opened after ${state.consecutiveFailures} consecutive failures`,
      );
    this.queue(provider, mirror, 'failure', statusChanged);
  }

  /** Waits until every outcome seen here is in the shared row (tests and shutdown). */
  async flushAll(): Promise<void> {
    for (const [provider, mirror] of this.mirrors) {
      if (mirror.timer) clearTimeout(mirror.timer);
      mirror.timer = null;
      // a few rounds: outcomes may arrive while a write is in flight (each round writes all pending ones)
      for (let round = 0; round < FLUSH_ALL_ROUNDS && (mirror.flushing || mirror.pending.length > 0); round++) {
        await (mirror.flushing ?? this.flush(provider));
      }
    }
  }

  /** Sends the one probe of a circuit whose cooldown is over, whether or not traffic arrives. */
  @Interval('circuit-probes', 250)
  async probeDueCircuits(): Promise<void> {
    if (this.closing.signal.aborted) return;
    const now = Date.now();
    for (const [provider, mirror] of this.mirrors) {
      if (this.closing.signal.aborted) return;
      if (this.probing.has(provider) || !this.breaker.probeDue(mirror.state, now)) continue;
      this.probing.add(provider);
      const run = this.probe(provider).finally(() => this.probing.delete(provider));
      this.probesInFlight.add(run);
      await run.finally(() => this.probesInFlight.delete(run));
    }
  }

  private mirror(provider: string): Mirror {
    let mirror = this.mirrors.get(provider);
    if (!mirror) {
      mirror = { state: this.breaker.initial(), version: -1, pending: [], flushing: null, timer: null, urgent: false };
      this.mirrors.set(provider, mirror);
    }
    return mirror;
  }

  /**
   * A status change (tripped, healed) is written at once, for the other replicas to follow; outcomes
   * that only move the count (a degraded provider failing again) wait up to COUNT_WRITE_DELAY_MS and
   * share one write, instead of a read and a compare-and-set per request.
   */
  private queue(provider: string, mirror: Mirror, outcome: Outcome, statusChanged: boolean): void {
    mirror.pending.push(outcome);
    if (statusChanged) mirror.urgent = true;
    this.schedule(provider, mirror);
  }

  private schedule(provider: string, mirror: Mirror): void {
    if (mirror.flushing) return; // its end schedules what came in meanwhile
    if (mirror.urgent) {
      if (mirror.timer) clearTimeout(mirror.timer);
      mirror.timer = null;
      setImmediate(() => void this.flush(provider));
      return;
    }
    if (mirror.timer) return;
    mirror.timer = setTimeout(() => {
      mirror.timer = null;
      void this.flush(provider);
    }, COUNT_WRITE_DELAY_MS);
    mirror.timer.unref();
  }

  /** Applies this replica's pending outcomes to the shared row (retrying when another replica wrote first). */
  private flush(provider: string): Promise<void> {
    const mirror = this.mirror(provider);
    mirror.flushing ??= this.writePending(provider, mirror).finally(() => {
      mirror.flushing = null;
      // outcomes queued while the last write settled found it busy: schedule them now
      if (mirror.pending.length > 0 && !this.stopped) this.schedule(provider, mirror);
    });
    return mirror.flushing;
  }

  private async writePending(provider: string, mirror: Mirror): Promise<void> {
    try {
      // one write; what arrives meanwhile is scheduled by flush's end (at once if urgent, else coalesced)
      if (mirror.pending.length > 0 && !this.stopped) {
        const batch = mirror.pending.splice(0);
        mirror.urgent = false;
        const written = await this.apply(provider, (state, now) => batch.reduce((s, o) => this.step(s, o, now), state));
        if (!written) {
          this.logger.warn(
            `circuit of ${provider}: could not record ${batch.length} outcome(s) after ${CAS_ATTEMPTS} attempts`,
          );
          return;
        }
        const now = Date.now();
        mirror.state = mirror.pending.reduce((s, o) => this.step(s, o, now), written.state);
        mirror.version = written.version;
        if (written.changedStatus) await this.feed.notify(CIRCUITS_CHANNEL, provider).catch(() => undefined);
      }
    } catch (err) {
      this.logger.warn(`circuit of ${provider}: write failed: ${(err as Error).message}`);
    }
  }

  private step(state: BreakerState, outcome: Outcome, now: number): BreakerState {
    return outcome === 'success'
      ? this.breaker.recordSuccess(state, now)
      : this.breaker.recordFailure(state, now).state;
  }

  /** Read, transform with the pure breaker, compare-and-set; null when it kept losing. */
  private async apply(
    provider: string,
    transform: (state: BreakerState, now: number) => BreakerState | null,
  ): Promise<{ state: BreakerState; version: number; changedStatus: boolean } | null> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt += 1) {
      const current = await this.store.get(provider);
      if (!current) {
        // the row is made on a provider's first write only, not one INSERT per flush
        await this.store.ensure(provider, this.breaker.initial());
        continue;
      }
      const next = transform(current.state, Date.now());
      if (next === null) return null;
      if (await this.store.compareAndSet(provider, current.version, next)) {
        return { state: next, version: current.version + 1, changedStatus: next.status !== current.state.status };
      }
    }
    return null;
  }

  private async probe(provider: string): Promise<void> {
    const adapter = this.adapters.get(provider);
    if (!adapter) return;
    // claim: only the replica whose compare-and-set moves the row to `recovering` sends the probe
    const claimed = await this.apply(provider, (state, now) =>
      this.breaker.probeDue(state, now) ? this.breaker.startProbe(state, now) : null,
    ).catch(() => null);
    if (!claimed) return;
    this.mirror(provider).state = claimed.state;
    this.mirror(provider).version = claimed.version;
    await this.feed.notify(CIRCUITS_CHANNEL, provider).catch(() => undefined);

    const requestId = newRequestId();
    const started = Date.now();
    const ok = await adapter.probe(AbortSignal.any([AbortSignal.timeout(PROBE_TIMEOUT_MS), this.closing.signal])).then(
      () => true,
      () => false,
    );
    const latencyMs = Date.now() - started;
    // cut short by shutdown: the row stays `recovering` and another replica probes after the cooldown
    if (this.closing.signal.aborted) return;
    let recovered = false;
    const finished = await this.apply(provider, (state, now) => {
      if (state.status !== 'recovering') return null;
      const result = this.breaker.recordProbe(state, ok, now);
      recovered = result.recovered;
      return result.state;
    }).catch(() => null);
    if (!finished) return;
    this.mirror(provider).state = finished.state;
    this.mirror(provider).version = finished.version;
    this.logger.log(
      `probe of ${provider} ${ok ? 'succeeded: circuit closed' : 'failed: circuit stays open'} (${requestId})`,
    );
    // the only record of the recovery: EventsService keeps it in memory and retries until it is stored
    if (recovered) this.events.recordRecovered(provider, requestId, latencyMs);
    await this.feed.notify(CIRCUITS_CHANNEL, provider).catch(() => undefined);
  }

  /** Mirrors rows newer than what this replica holds (NOTIFY, and every sync interval as a safety net). */
  private async sync(): Promise<void> {
    if (this.closing.signal.aborted) return;
    try {
      for (const stored of await this.store.all()) {
        const mirror = this.mirror(stored.provider);
        if (stored.version > mirror.version && !mirror.flushing) {
          const now = Date.now();
          mirror.state = mirror.pending.reduce((s, o) => this.step(s, o, now), stored.state);
          mirror.version = stored.version;
        }
      }
    } catch (err) {
      this.logger.warn(`circuit sync failed: ${(err as Error).message}`);
    }
  }
}
