import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { bulkCopy, copyRows } from '../database/bulk-copy';
import { BatchOutcome, BulkColumn, bulkInsert, insertBatch } from '../database/bulk-insert';
import { DatabaseEndpoint } from '../database/database-endpoint';
import { maintenanceQuery } from '../database/maintenance-query';
import { pgPoolOf } from '../database/pg-pool';
import { UsageRecordEntity } from './usage-record.entity';

export type NewUsageRecord = Omit<UsageRecordEntity, 'id' | 'createdAt'>;

const COLUMNS: readonly BulkColumn[] = [
  { name: 'request_id', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'capability', type: 'text' },
  { name: 'requested_model', type: 'text' },
  { name: 'provider', type: 'text' },
  { name: 'model', type: 'text' },
  { name: 'fallback_level', type: 'integer' },
  { name: 'status', type: 'integer' },
  { name: 'latency_ms', type: 'integer' },
  { name: 'attempts', type: 'jsonb' },
  { name: 'prompt_tokens', type: 'integer' },
  { name: 'completion_tokens', type: 'integer' },
  { name: 'total_tokens', type: 'integer' },
  { name: 'characters', type: 'integer' },
];
/** The two ways a batch goes in (exported for bench/usage-write.ts, which times them against each other). */
export const USAGE_INSERT = bulkInsert('usage_records', COLUMNS);
export const USAGE_COPY = bulkCopy('usage_records', COLUMNS);

/** A record as the row both statements take, values in column order. */
export const usageRow = (r: NewUsageRecord): unknown[] => [
  r.requestId,
  r.keyId,
  r.capability,
  r.requestedModel,
  r.provider,
  r.model,
  r.fallbackLevel,
  r.status,
  r.latencyMs,
  r.attempts,
  r.promptTokens,
  r.completionTokens,
  r.totalTokens,
  r.characters,
];

/**
 * `usage_records`: written a batch at a time in one COPY (raw SQL: no per-row ORM work; on the embedded database,
 * which has no COPY, one multi-row INSERT), read a key's page at a time.
 */
@Injectable()
export class UsageRecordsRepository {
  /** COPY where the server has it (not the embedded PGlite). */
  private readonly copies: boolean;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(UsageRecordEntity) private readonly records: Repository<UsageRecordEntity>,
    endpoint: DatabaseEndpoint,
  ) {
    this.copies = !endpoint.isEmbedded;
  }

  /** One COPY (or INSERT) of the batch; a row the database refuses is reported and the rest still go in. */
  insert(batch: NewUsageRecord[]): Promise<BatchOutcome> {
    const pool = pgPoolOf(this.dataSource);
    return insertBatch(
      (query) => pool.query(query),
      USAGE_INSERT,
      batch.map(usageRow),
      this.copies ? (rows) => copyRows(pool, USAGE_COPY, rows) : undefined,
    );
  }

  /**
   * Up to `limit` records of the key after the record `cursor` (an id of its own, else null), newest first,
   * or oldest first for one request (`requestId`) and the records made under it (`<id>_<n>`).
   */
  async page(
    keyId: string,
    options: { requestId?: string; cursor?: string; limit: number },
  ): Promise<UsageRecordEntity[] | null> {
    const { requestId, cursor, limit } = options;
    const oldestFirst = requestId !== undefined;
    const query = this.records.createQueryBuilder('r').where('r.key_id = :keyId', { keyId });
    // ids are base62 joined by `_`, so the prefix only needs `_` escaped for LIKE
    if (requestId)
      query.andWhere('(r.request_id = :requestId OR r.request_id LIKE :prefix)', {
        requestId,
        prefix: `${requestId.replace(/_/g, '\\_')}\\_%`,
      });
    if (cursor && !(await query.clone().andWhere('r.id = :cursor', { cursor }).getExists())) return null;
    if (cursor) query.andWhere(oldestFirst ? 'r.id > :cursor' : 'r.id < :cursor', { cursor });
    return query
      .orderBy('r.id', oldestFirst ? 'ASC' : 'DESC')
      .limit(limit)
      .getMany();
  }

  /** Deletes up to `batch` of the oldest records past `retentionSeconds` (its own, longer deadline: no request waits for it). */
  async deleteExpired(retentionSeconds: number, batch: number): Promise<number> {
    // ids grow with time: the oldest rows come first, and a sweep with nothing to delete reads one index entry
    const { rowCount } = await maintenanceQuery(
      pgPoolOf(this.dataSource),
      `DELETE FROM usage_records WHERE id IN (
         SELECT id FROM (SELECT id, created_at FROM usage_records ORDER BY id LIMIT ${Math.floor(batch)}) oldest
          WHERE created_at < now() - make_interval(secs => $1))`,
      [retentionSeconds],
    );
    return rowCount ?? 0;
  }
}
