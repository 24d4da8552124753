import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The single row of fan-out progress: every gateway event at or before (`cursor_txid`, `cursor_id`)
 * has been handled. Its row lock is the fan-out claim, so one replica at a time fans out.
 */
@Entity({ name: 'webhook_fanout_state' })
export class WebhookFanoutStateEntity {
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'PK_webhook_fanout_state' })
  id!: number;

  /** The transaction id of the last event handled (bigint: pg returns it as a string). */
  @Column({ name: 'cursor_txid', type: 'bigint', default: '1' })
  cursorTxid!: string;

  /** The id of the last event handled within that transaction. */
  @Column({ name: 'cursor_id', type: 'text', default: '' })
  cursorId!: string;
}
