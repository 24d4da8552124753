import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { BulkColumn, bulkInsert, insertBatch } from '../database/bulk-insert';
import { pgPoolOf } from '../database/pg-pool';
import { GatewayEventEntity } from './gateway-event.entity';

export interface FailoverEventData {
  keyId: string;
  model: string;
  exhaustedProvider: string | null;
  activeProvider: string;
  fallbackLevel: number;
  latencyMs: number;
  requestId: string;
}

type NewEvent = Pick<GatewayEventEntity, 'id' | 'type' | 'keyId' | 'provider' | 'data'>;
const EVENT_COLUMNS: readonly BulkColumn[] = [
  { name: 'id', type: 'text' },
  { name: 'type', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'provider', type: 'text' },
  { name: 'data', type: 'jsonb' },
];
const INSERT = bulkInsert('gateway_events', EVENT_COLUMNS);
type PendingEvent = { row: NewEvent; resolve: () => void; reject: (err: Error) => void };
/**
 * INSERTs in flight at once. While they wait for their commit, newer events gather for the next
 * one: under load a few large INSERTs replace one per request (one in flight left the process idle
 * during each commit; two keep it busy).
 */
const MAX_IN_FLIGHT = 2;
/** Rows per INSERT at most (a backlog after a database outage leaves in several). */
const MAX_ROWS = 1000;

/**
 * Stores failover and recovery events durably (webhooks deliver from the table). A failover event
 * is awaited before the response that caused it; concurrent ones share one INSERT (group commit).
 */
@Injectable()
export class EventsService {
  private pending: PendingEvent[] = [];
  private scheduled = false;
  private inFlight = 0;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  recordFailover(e: FailoverEventData): Promise<void> {
    return this.enqueue({
      id: `evt_${randomUUID()}`,
      type: 'failover',
      keyId: e.keyId,
      provider: e.activeProvider,
      data: {
        proxy_key: e.keyId,
        model: e.model,
        exhausted_provider: e.exhaustedProvider,
        active_provider: e.activeProvider,
        fallback_level: e.fallbackLevel,
        latency_ms: e.latencyMs,
        request_id: e.requestId,
      },
    });
  }

  /** `data.proxy_key` and `data.model` depend on the receiving key, so they are filled in at fan-out. */
  recordRecovered(provider: string, requestId: string, latencyMs: number): Promise<void> {
    return this.enqueue({
      id: `evt_${randomUUID()}`,
      type: 'provider_recovered',
      keyId: null,
      provider,
      data: { exhausted_provider: null, active_provider: provider, fallback_level: null, latency_ms: latencyMs, request_id: requestId },
    });
  }

  private enqueue(row: NewEvent): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      this.schedule();
    });
  }

  /** Flushes after the current turn, so the events of requests finishing together share an INSERT. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.pending.length <= MAX_ROWS ? this.pending : this.pending.slice(0, MAX_ROWS);
    this.pending = batch === this.pending ? [] : this.pending.slice(MAX_ROWS);
    this.inFlight += 1;
    try {
      const pool = pgPoolOf(this.dataSource);
      const rows = batch.map(({ row }) => [row.id, row.type, row.keyId, row.provider, row.data]);
      const outcome = await insertBatch((query) => pool.query(query), INSERT, rows);
      const refused = new Map(outcome.refused.map((r) => [r.index, r.error]));
      batch.forEach((p, index) => {
        const error = index < outcome.processed ? refused.get(index) : outcome.error;
        if (error) p.reject(error);
        else p.resolve();
      });
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
    } finally {
      this.inFlight -= 1;
      this.schedule();
    }
  }
}
