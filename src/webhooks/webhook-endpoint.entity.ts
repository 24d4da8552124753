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
import { ProxyKeyEntity } from '../keys/proxy-key.entity';
import type { WebhookEventType } from './signature';

/** A URL of one key that receives signed event deliveries. */
@Entity({ name: 'webhook_endpoints' })
@Index('webhook_endpoints_key_order', ['keyId', 'createdAt', 'seq'])
@Unique('UQ_webhook_endpoints_seq', ['seq'])
export class WebhookEndpointEntity {
  /** `we_…`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_webhook_endpoints' })
  id!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @ManyToOne(() => ProxyKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'FK_webhook_endpoints_key' })
  key?: ProxyKeyEntity;

  @Column({ type: 'text' })
  url!: string;

  @Column({ type: 'text', array: true })
  events!: WebhookEventType[];

  @Column({ type: 'boolean', default: true })
  enabled!: boolean;

  /** The signing secret: AES-256-GCM sealed when SVC_SECRET_KEY is set, else as issued. */
  @Column({ type: 'text', select: false })
  secret!: string;

  /** Attempts in a row that got no answer in time; any other outcome sets it back to 0. */
  @Column({ name: 'consecutive_timeouts', type: 'integer', default: 0 })
  consecutiveTimeouts!: number;

  /** While in the future, the endpoint's deliveries wait (it kept timing out): they are not attempted. */
  @Column({ name: 'backoff_until', type: 'timestamptz', nullable: true })
  backoffUntil!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  /** Insertion order: breaks ties between equal timestamps so pages are stable. */
  @Column({ type: 'bigint' })
  @Generated('increment')
  seq!: string;
}
