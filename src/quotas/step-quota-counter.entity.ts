import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Requests a key sent to one chain step in one fixed window, summed over every replica. */
@Entity({ name: 'usage_counters' })
export class StepQuotaCounterEntity {
  /** `<key id>#<chain index>`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_usage_counters' })
  counter!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_usage_counters' })
  per!: string;

  /** Window start, epoch ms. */
  @PrimaryColumn({ name: 'window_start', type: 'bigint', primaryKeyConstraintName: 'PK_usage_counters' })
  windowStart!: string;

  @Column({ type: 'integer' })
  count!: number;
}
