import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Requests of one key in one UTC minute, summed over every replica (rows older than the previous minute are deleted). */
@Entity({ name: 'rate_limit_counters' })
export class RateLimitCounterEntity {
  @PrimaryColumn({ name: 'key_id', type: 'text', primaryKeyConstraintName: 'PK_rate_limit_counters' })
  keyId!: string;

  /** Window start, epoch ms. */
  @PrimaryColumn({ name: 'window_start', type: 'bigint', primaryKeyConstraintName: 'PK_rate_limit_counters' })
  windowStart!: string;

  @Column({ type: 'integer' })
  count!: number;
}
