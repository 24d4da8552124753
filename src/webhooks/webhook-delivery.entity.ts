import {
  Column,
  CreateDateColumn,
  Entity,
  Generated,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  Unique,
  UpdateDateColumn,
} from 'typeorm';
import type { WebhookEventType } from './signature';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event owed to one endpoint: its body is fixed here once, and attempts are made until one succeeds or the schedule ends. */
@Entity({ name: 'webhook_deliveries' })
@Unique('UQ_webhook_deliveries_endpoint_event', ['endpointId', 'eventId'])
@Index('webhook_deliveries_due', ['status', 'nextAttemptAt'])
export class WebhookDeliveryEntity {
  /** `dlv_…`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_webhook_deliveries' })
  id!: string;

  @Column({ name: 'endpoint_id', type: 'text' })
  endpointId!: string;

  @ManyToOne(() => WebhookEndpointEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'FK_webhook_deliveries_endpoint' })
  endpoint?: WebhookEndpointEntity;

  @Column({ name: 'event_id', type: 'text' })
  eventId!: string;

  @Column({ type: 'text' })
  event!: WebhookEventType;

  /** The exact body bytes every attempt sends. */
  @Column({ type: 'text' })
  payload!: string;

  @Column({ type: 'text' })
  status!: DeliveryStatus;

  /** Attempts made so far. */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt!: Date;

  /** Set while a worker sends an attempt; an expired lock means that worker died. */
  @Column({ name: 'locked_until', type: 'timestamptz', nullable: true })
  lockedUntil!: Date | null;

  /** Token of the worker holding the lock: only it may record the attempt. */
  @Column({ type: 'text', nullable: true })
  claim!: string | null;

  /** The W3C traceparent of the request that caused the event (copied from it at fan-out); null while traces are off. */
  @Column({ type: 'text', nullable: true })
  traceparent!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** One attempt at a delivery: what `GET /v1/user/webhooks/{id}/deliveries` lists. */
@Entity({ name: 'webhook_delivery_attempts' })
@Index('webhook_delivery_attempts_endpoint_order', ['endpointId', 'createdAt', 'seq'])
@Unique('UQ_webhook_delivery_attempts_seq', ['seq'])
@Unique('UQ_webhook_delivery_attempts_attempt', ['deliveryId', 'attempt'])
export class WebhookAttemptEntity {
  /** `whd_…`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_webhook_delivery_attempts' })
  id!: string;

  @Column({ name: 'delivery_id', type: 'text' })
  deliveryId!: string;

  @ManyToOne(() => WebhookDeliveryEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id', foreignKeyConstraintName: 'FK_webhook_delivery_attempts_delivery' })
  delivery?: WebhookDeliveryEntity;

  @Column({ name: 'endpoint_id', type: 'text' })
  endpointId!: string;

  @ManyToOne(() => WebhookEndpointEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'FK_webhook_delivery_attempts_endpoint' })
  endpoint?: WebhookEndpointEntity;

  @Column({ name: 'event_id', type: 'text' })
  eventId!: string;

  @Column({ type: 'text' })
  event!: WebhookEventType;

  /** 1 for the first attempt. */
  @Column({ type: 'integer' })
  attempt!: number;

  /** The receiver's HTTP status; null when no response came. */
  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode!: number | null;

  @Column({ name: 'latency_ms', type: 'integer', nullable: true })
  latencyMs!: number | null;

  /** Why the attempt failed; null on success. */
  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** The start of the receiver's answer (at most 2 KiB), for operators. */
  @Column({ name: 'response_snippet', type: 'text', nullable: true })
  responseSnippet!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ type: 'bigint' })
  @Generated('increment')
  seq!: string;
}
