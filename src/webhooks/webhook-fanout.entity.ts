import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** Marks a gateway event as fanned out; kept only while the event is newer than the watermark. */
@Entity({ name: 'webhook_fanout_events' })
@Index('webhook_fanout_events_created', ['eventCreatedAt'])
export class WebhookFanoutEventEntity {
  @PrimaryColumn({ name: 'event_id', type: 'text', primaryKeyConstraintName: 'PK_webhook_fanout_events' })
  eventId!: string;

  @Column({ name: 'event_created_at', type: 'timestamptz' })
  eventCreatedAt!: Date;
}

/**
 * The single row of fan-out progress: every event created before `watermark` has been handled. Its
 * row lock is the fan-out claim, so one replica at a time fans out.
 */
@Entity({ name: 'webhook_fanout_state' })
export class WebhookFanoutStateEntity {
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'PK_webhook_fanout_state' })
  id!: number;

  @Column({ type: 'timestamptz' })
  watermark!: Date;
}
