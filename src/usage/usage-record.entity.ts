import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export interface AttemptRecord {
  provider: string;
  model: string;
  level: number;
  /** `ok`, `skipped: …`, or the failure reason (`HTTP 503`, `timeout`, ...). */
  outcome: string;
  latency_ms: number | null;
  /** A retry on the same step (decisions §3): its attempt number there (2 for the first retry). */
  attempt?: number;
  retry?: true;
  /** The provider's account the attempt used, for a provider with accounts (decisions §7); never its key. */
  account?: string;
}

/** One proxied request: who served it, how, and what it cost. Written in batches. */
@Entity({ name: 'usage_records' })
@Index('usage_records_key_request', ['keyId', 'requestId'])
export class UsageRecordEntity {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'PK_usage_records' })
  id!: string;

  @Column({ name: 'request_id', type: 'text' })
  requestId!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  /** `chat` or `speech`. */
  @Column({ type: 'text' })
  capability!: string;

  @Column({ name: 'requested_model', type: 'text' })
  requestedModel!: string;

  @Column({ type: 'text', nullable: true })
  provider!: string | null;

  @Column({ type: 'text', nullable: true })
  model!: string | null;

  @Column({ name: 'fallback_level', type: 'integer', nullable: true })
  fallbackLevel!: number | null;

  @Column({ type: 'integer' })
  status!: number;

  @Column({ name: 'latency_ms', type: 'integer' })
  latencyMs!: number;

  @Column({ type: 'jsonb' })
  attempts!: AttemptRecord[];

  @Column({ name: 'prompt_tokens', type: 'integer', nullable: true })
  promptTokens!: number | null;

  @Column({ name: 'completion_tokens', type: 'integer', nullable: true })
  completionTokens!: number | null;

  @Column({ name: 'total_tokens', type: 'integer', nullable: true })
  totalTokens!: number | null;

  /** Characters synthesised (speech). */
  @Column({ type: 'integer', nullable: true })
  characters!: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
