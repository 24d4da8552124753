import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge } from 'prom-client';
import { EnvironmentVariables } from '../config/env.schema';
import { MetricsService } from '../metrics/metrics.service';
import { ClosingEvent, FailoverCoalescer, FailoverCondition, FailoverSample } from './failover-coalescer';
import { GatewayEventsRepository, NewEvent } from './gateway-events.repository';
import { BufferedEntry, RetryBuffer } from './retry-buffer';

export type FailoverEventData = FailoverCondition & FailoverSample;

/** Decisions §8: how long a failover's response waits for its event to be stored. */
export const FAILOVER_EVENT_WAIT_MS = 250;
/** Events held in memory (waiting for the database or being written) at most; past it a new event is dropped, logged and counted. */
export const EVENT_BUFFER_CAPACITY = 10_000;
/** Waits between attempts to store an event: 250 ms doubling to 10 s. */
const BACKOFF = { firstMs: 250, maxMs: 10_000 };
/** At shutdown, events not stored yet are tried for this long (the database may be restarting) before they are given up. */
const SHUTDOWN_FLUSH_MS = 5000;
/** INSERTs in flight at once: while they wait for their commit, newer events gather for the next one (group commit). */
const MAX_IN_FLIGHT = 2;
/** Rows per INSERT at most (a backlog after a database outage leaves in several). */
const MAX_ROWS = 1000;

type StoredKind = 'failover_first' | 'failover_closing' | 'provider_recovered';
interface Pending {
  row: NewEvent;
  kind: StoredKind;
  /** Called once the row is stored (a failover's response may be waiting for it). */
  stored?: () => void;
}

/** The row is there already: an earlier write that looked failed (timed out) did commit. */
const UNIQUE_VIOLATION = '23505';

const failoverRow = (
  c: FailoverCondition,
  s: FailoverSample,
  closing?: { count: number; windowSecs: number },
): NewEvent => ({
  id: `evt_${randomUUID()}`,
  type: 'failover',
  keyId: c.keyId,
  provider: c.activeProvider,
  traceparent: s.traceparent ?? null,
  data: {
    proxy_key: c.keyId,
    model: c.model,
    exhausted_provider: c.exhaustedProvider,
    active_provider: c.activeProvider,
    fallback_level: s.fallbackLevel,
    latency_ms: s.latencyMs,
    request_id: s.requestId,
    ...(c.midStream && { mid_stream: true }),
    ...(closing && { coalesced_count: closing.count, window_secs: closing.windowSecs }),
  },
});

/**
 * Stores failover and recovery events (webhooks deliver from the table). A failover waits at most
 * FAILOVER_EVENT_WAIT_MS for its event; whatever is not stored by then stays in memory and is retried
 * with backoff until stored (decisions §8). Failovers of one condition within the window are coalesced.
 */
@Injectable()
export class EventsService implements OnApplicationShutdown {
  private readonly logger = new Logger(EventsService.name);
  private readonly coalescer: FailoverCoalescer;
  private readonly buffer = new RetryBuffer<Pending>(EVENT_BUFFER_CAPACITY, BACKOFF);
  private readonly storedTotal: Counter<'kind'>;
  private readonly droppedTotal: Counter<'reason'>;
  private readonly writes = new Set<Promise<void>>();
  private scheduled = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private windowTimer: NodeJS.Timeout | null = null;
  private windowTimerAt = Infinity;
  /** Failed writes in a row (one warning per streak, not per retry). */
  private failing = 0;

  constructor(
    private readonly events: GatewayEventsRepository,
    env: EnvironmentVariables,
    metrics: MetricsService,
  ) {
    this.coalescer = new FailoverCoalescer(env.SVC_FAILOVER_EVENT_WINDOW * 1000);
    const registers = [metrics.registry];
    const buffer = this.buffer;
    const coalescer = this.coalescer;
    new Gauge({
      name: 'svc_gateway_events_pending',
      help: 'Failover and recovery events held in memory on this replica until the database stores them.',
      registers,
      collect() {
        this.set(buffer.size);
      },
    });
    new Gauge({
      name: 'svc_failovers_coalescing',
      help: "Failovers counted in this replica's open coalescing windows, to be reported by their closing events.",
      registers,
      collect() {
        this.set(coalescer.counted);
      },
    });
    this.storedTotal = new Counter({
      name: 'svc_gateway_events_stored_total',
      help: 'Events stored by this replica, by kind: failover_first (a window opens), failover_closing (carries coalesced_count), provider_recovered.',
      labelNames: ['kind'],
      registers,
    });
    this.droppedTotal = new Counter({
      name: 'svc_gateway_events_dropped_total',
      help: 'Events given up by this replica, by reason: buffer_full, refused (the database refused the row), shutdown (not stored before exit).',
      labelNames: ['reason'],
      registers,
    });
    for (const kind of ['failover_first', 'failover_closing', 'provider_recovered']) this.storedTotal.inc({ kind }, 0);
    for (const reason of ['buffer_full', 'refused', 'shutdown']) this.droppedTotal.inc({ reason }, 0);
  }

  /**
   * Records one failover. The first of its condition in a window is stored and awaited for at most
   * FAILOVER_EVENT_WAIT_MS; a later one is only counted (no SQL, and null: nothing to wait for). Never rejects.
   */
  recordFailover(e: FailoverEventData): Promise<void> | null {
    const condition: FailoverCondition = {
      keyId: e.keyId,
      model: e.model,
      exhaustedProvider: e.exhaustedProvider,
      activeProvider: e.activeProvider,
      ...(e.midStream && { midStream: true }),
    };
    const sample: FailoverSample = {
      fallbackLevel: e.fallbackLevel,
      latencyMs: e.latencyMs,
      requestId: e.requestId,
      traceparent: e.traceparent ?? null,
    };
    if (this.coalescer.observe(condition, sample, Date.now()) === 'counted') return null;
    this.armWindowTimer();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FAILOVER_EVENT_WAIT_MS);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      if (!this.enqueue({ row: failoverRow(condition, sample), kind: 'failover_first', stored: done })) done();
    });
  }

  /**
   * Queues a `provider_recovered` event (stored in the background, retried until stored). `data.proxy_key` and
   * `data.model` are filled in at fan-out; `traceparent` names the trial request's span (null: none, or traces off).
   */
  recordRecovered(provider: string, requestId: string, latencyMs: number, traceparent: string | null = null): void {
    this.enqueue({
      row: {
        id: `evt_${randomUUID()}`,
        type: 'provider_recovered',
        keyId: null,
        provider,
        traceparent,
        data: {
          exhausted_provider: null,
          active_provider: provider,
          fallback_level: null,
          latency_ms: latencyMs,
          request_id: requestId,
        },
      },
      kind: 'provider_recovered',
    });
  }

  /** Closes every coalescing window and stores what is held, for up to SHUTDOWN_FLUSH_MS; what is left is logged and counted. */
  async onApplicationShutdown(): Promise<void> {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.windowTimer = this.retryTimer = null;
    this.windowTimerAt = -Infinity; // no new timer: shutdown writes the rest itself
    this.enqueueClosing(this.coalescer.closeAll());
    const deadline = Date.now() + SHUTDOWN_FLUSH_MS;
    while (this.buffer.size > 0 && Date.now() < deadline) {
      // every waiting event now, whatever its backoff: this is the last chance
      const batch = this.buffer.take(Infinity, MAX_ROWS);
      if (batch.length > 0) await this.write(batch);
      else if (this.writes.size > 0) await Promise.race([...this.writes]);
      if (this.buffer.size > 0 && this.failing > 0) await sleep(250);
    }
    await Promise.allSettled([...this.writes]);
    for (const { row } of this.buffer.drain()) {
      this.droppedTotal.inc({ reason: 'shutdown' });
      this.logger.error(
        { event: row },
        `${row.type} event ${row.id} could not be stored before exit: the database did not answer`,
      );
    }
  }

  private enqueue(pending: Pending): boolean {
    if (!this.buffer.add(pending, Date.now())) {
      this.droppedTotal.inc({ reason: 'buffer_full' });
      this.logger.error(
        { event: pending.row },
        `event buffer full (${EVENT_BUFFER_CAPACITY}): ${pending.row.type} event ${pending.row.id} dropped; is the database reachable?`,
      );
      return false;
    }
    this.schedule();
    return true;
  }

  private enqueueClosing(closing: ClosingEvent[]): void {
    for (const c of closing)
      this.enqueue({
        row: failoverRow(c.condition, c.last, { count: c.count, windowSecs: c.windowSecs }),
        kind: 'failover_closing',
      });
  }

  /** One timer for the soonest window end; its closing events are queued when it fires. */
  private armWindowTimer(): void {
    const end = this.coalescer.nextEnd();
    if (end === null || end >= this.windowTimerAt) return;
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimerAt = end;
    this.windowTimer = setTimeout(
      () => {
        this.windowTimer = null;
        this.windowTimerAt = Infinity;
        this.enqueueClosing(this.coalescer.due(Date.now()));
        this.armWindowTimer();
      },
      Math.max(0, end - Date.now()),
    );
    this.windowTimer.unref();
  }

  /** Writes due events after the current turn (so the events of requests finishing together share an INSERT), or when the soonest retry is due. */
  private schedule(): void {
    if (this.scheduled || this.writes.size >= MAX_IN_FLIGHT || this.windowTimerAt === -Infinity) return;
    const due = this.buffer.nextDue();
    if (due === null) return;
    const wait = due - Date.now();
    if (wait <= 0) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const batch = this.buffer.take(Date.now(), MAX_ROWS);
        if (batch.length > 0) void this.write(batch);
        else this.schedule();
      });
    } else if (!this.retryTimer) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.schedule();
      }, wait);
      this.retryTimer.unref();
    }
  }

  private write(batch: Array<BufferedEntry<Pending>>): Promise<void> {
    const run = this.insert(batch).finally(() => {
      this.writes.delete(run);
      this.schedule();
    });
    this.writes.add(run);
    return run;
  }

  private async insert(batch: Array<BufferedEntry<Pending>>): Promise<void> {
    const outcome = await this.events.insert(batch.map(({ item }) => item.row));
    const refused = new Map(outcome.refused.map((r) => [r.index, r.error]));
    const settled = batch.slice(0, outcome.processed);
    this.buffer.done(settled);
    this.buffer.failed(batch.slice(outcome.processed), Date.now());
    settled.forEach(({ item }, index) => {
      const error = refused.get(index);
      if (error && (error as { code?: unknown }).code !== UNIQUE_VIOLATION) {
        // retrying a row the database refuses would hold it in memory for ever
        this.droppedTotal.inc({ reason: 'refused' });
        this.logger.error(
          { event: item.row },
          `${item.row.type} event ${item.row.id} refused by the database and dropped: ${error.message}`,
        );
      } else {
        this.storedTotal.inc({ kind: item.kind });
      }
      item.stored?.();
    });
    if (outcome.error) {
      if (this.failing++ === 0)
        this.logger.warn(
          `${this.buffer.size} event(s) not stored yet (${outcome.error.message}); kept in memory and retried`,
        );
    } else if (this.failing > 0) {
      this.logger.log(
        `events are stored again after ${this.failing} failed write(s); ${this.buffer.size} still pending`,
      );
      this.failing = 0;
    }
  }
}
