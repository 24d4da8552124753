import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A single-use ticket for the speech WebSocket upgrade (decisions §10); the ticket itself is never stored. */
@Entity({ name: 'stream_tickets' })
export class StreamTicketEntity {
  /** SHA-256 hex of the ticket. */
  @PrimaryColumn({ name: 'ticket_hash', type: 'text', primaryKeyConstraintName: 'PK_stream_tickets' })
  ticketHash!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
