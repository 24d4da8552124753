import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
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
type PendingEvent = { row: NewEvent; resolve: () => void; reject: (err: Error) => void };

/**
 * Stores failover and recovery events durably (webhooks deliver from the table). A failover event
 * is awaited before the response that caused it; concurrent ones share one INSERT (group commit).
 */
@Injectable()
export class EventsService {
  private pending: PendingEvent[] = [];
  private scheduled = false;

  constructor(@InjectRepository(GatewayEventEntity) private readonly events: Repository<GatewayEventEntity>) {}

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
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    try {
      // TypeORM's deep-partial type cannot express a jsonb column holding nulls; the rows are complete
      await this.events.insert(batch.map((p) => p.row) as QueryDeepPartialEntity<GatewayEventEntity>[]);
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
    }
  }
}
