import type { Logger } from '@nestjs/common';
import type { PgChangeFeed } from '../database/pg-change-feed';
import type { BreakerStore } from './breaker.store';
import type { BreakerState, CircuitBreaker } from './circuit-breaker';

export const CIRCUITS_CHANNEL = 'svc_circuits_changed';
const CAS_ATTEMPTS = 8;
/** How long outcomes that change no circuit's status may wait to share one write. */
const COUNT_WRITE_DELAY_MS = 50;
const FLUSH_ALL_ROUNDS = 5;

export type Outcome = 'success' | 'failure';

export interface Mirror {
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

/** A row as written: its state, its new version, and whether its status changed. */
export interface Written {
  state: BreakerState;
  version: number;
  changedStatus: boolean;
}

/**
 * This replica's copy of every circuit row: outcomes are written behind the response, coalesced and
 * compare-and-set, and rows written elsewhere are taken in (NOTIFY, and a periodic sync as a safety net).
 */
export class CircuitMirrors {
  private readonly mirrors = new Map<string, Mirror>();
  private stopped = false;

  constructor(
    private readonly store: BreakerStore,
    private readonly feed: PgChangeFeed,
    private readonly breaker: CircuitBreaker,
    private readonly logger: Logger,
  ) {}

  get(provider: string): Mirror {
    let mirror = this.mirrors.get(provider);
    if (!mirror) {
      mirror = { state: this.breaker.initial(), version: -1, pending: [], flushing: null, timer: null, urgent: false };
      this.mirrors.set(provider, mirror);
    }
    return mirror;
  }

  entries(): IterableIterator<[string, Mirror]> {
    return this.mirrors.entries();
  }

  /** No write starts after this (the database is closing). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * A status change (tripped, healed) is written at once, for the other replicas to follow; outcomes
   * that only move the count (a degraded provider failing again) wait up to COUNT_WRITE_DELAY_MS and
   * share one write, instead of a read and a compare-and-set per request.
   */
  queue(provider: string, mirror: Mirror, outcome: Outcome, statusChanged: boolean): void {
    mirror.pending.push(outcome);
    if (statusChanged) mirror.urgent = true;
    this.schedule(provider, mirror);
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

  /**
   * Read, transform with the pure breaker, compare-and-set; null when it kept losing, or when the
   * transform declines the row as it is (which the mirror then takes in).
   */
  async apply(
    provider: string,
    transform: (state: BreakerState, now: number) => BreakerState | null,
  ): Promise<Written | null> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt += 1) {
      const current = await this.store.get(provider);
      if (!current) {
        // the row is made on a provider's first write only, not one INSERT per flush
        await this.store.ensure(provider, this.breaker.initial());
        continue;
      }
      const next = transform(current.state, Date.now());
      if (next === null) {
        if (!this.get(provider).flushing) this.adopt(provider, current);
        return null;
      }
      if (await this.store.compareAndSet(provider, current.version, next)) {
        return { state: next, version: current.version + 1, changedStatus: next.status !== current.state.status };
      }
    }
    return null;
  }

  /** Takes a row newer than the mirror's into it, replaying the outcomes still pending here on top. */
  adopt(provider: string, row: { state: BreakerState; version: number }): void {
    const mirror = this.get(provider);
    if (row.version <= mirror.version) return;
    const now = Date.now();
    mirror.state = mirror.pending.reduce((s, o) => this.step(s, o, now), row.state);
    mirror.version = row.version;
  }

  /** Mirrors rows newer than what this replica holds. */
  async sync(): Promise<void> {
    try {
      for (const stored of await this.store.all()) {
        if (!this.get(stored.provider).flushing) this.adopt(stored.provider, stored);
      }
    } catch (err) {
      this.logger.warn(`circuit sync failed: ${(err as Error).message}`);
    }
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
    const mirror = this.get(provider);
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
}
