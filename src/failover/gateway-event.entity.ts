import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

export type GatewayEventType = 'failover' | 'provider_recovered';

/** A stored `failover` or `provider_recovered` event; webhook deliveries are made from these. */
@Entity({ name: 'gateway_events' })
@Index('gateway_events_created', ['createdAt'])
@Index('gateway_events_txid', ['txid', 'id'])
export class GatewayEventEntity {
  /** `evt_<uuid>`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_gateway_events' })
  id!: string;

  @Column({ type: 'text' })
  type!: GatewayEventType;

  /** The key whose request failed over; null for a recovery (it concerns every key using the provider). */
  @Column({ name: 'key_id', type: 'text', nullable: true })
  keyId!: string | null;

  /** The provider the event is about (the serving one for failover, the recovered one). */
  @Column({ type: 'text' })
  provider!: string;

  /** The interface's `data` object (§6.4), minus the per-receiver `proxy_key` of recoveries. */
  @Column({ type: 'jsonb' })
  data!: Record<string, unknown>;

  /** The W3C traceparent of the request that caused it (its deliveries' spans link to it); null while traces are off. */
  @Column({ type: 'text', nullable: true })
  traceparent!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /**
   * The id of the transaction that stored it (txid_current(), a bigint pg returns as a string). Once every
   * transaction below some id has ended, no event can still appear below it: the fan-out's cursor
   * runs over (txid, id) up to the oldest transaction in progress.
   */
  @Column({ type: 'bigint', default: () => 'txid_current()' })
  txid!: string;
}
