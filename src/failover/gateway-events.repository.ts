import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { BatchOutcome, BulkColumn, bulkInsert, insertBatch } from '../database/bulk-insert';
import { pgPoolOf } from '../database/pg-pool';
import type { GatewayEventEntity } from './gateway-event.entity';

export type NewEvent = Pick<GatewayEventEntity, 'id' | 'type' | 'keyId' | 'provider' | 'data' | 'traceparent'>;

const EVENT_COLUMNS: readonly BulkColumn[] = [
  { name: 'id', type: 'text' },
  { name: 'type', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'provider', type: 'text' },
  { name: 'data', type: 'jsonb' },
  { name: 'traceparent', type: 'text' },
];
const INSERT = bulkInsert('gateway_events', EVENT_COLUMNS);

/** `gateway_events`: failover and recovery events, written in multi-row INSERTs (group commit). */
@Injectable()
export class GatewayEventsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** One INSERT of the rows; a row the database refuses is reported and the rest still go in. */
  insert(rows: NewEvent[]): Promise<BatchOutcome> {
    const pool = pgPoolOf(this.dataSource);
    return insertBatch(
      (query) => pool.query(query),
      INSERT,
      rows.map((row) => [row.id, row.type, row.keyId, row.provider, row.data, row.traceparent]),
    );
  }
}
