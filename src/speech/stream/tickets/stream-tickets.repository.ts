import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { StreamTicketEntity } from './stream-ticket.entity';

@Injectable()
export class StreamTicketsRepository {
  constructor(@InjectRepository(StreamTicketEntity) private readonly tickets: Repository<StreamTicketEntity>) {}

  async insert(ticketHash: string, keyId: string, expiresAt: Date): Promise<void> {
    await this.tickets.insert({ ticketHash, keyId, expiresAt });
  }

  /** The key of a live ticket, without taking it (an upgrade refused after this leaves the ticket usable). */
  async holder(ticketHash: string): Promise<string | null> {
    const rows = await this.tickets.query<Array<{ key_id: string }>>(
      `SELECT key_id FROM stream_tickets WHERE ticket_hash = $1 AND expires_at > now()`,
      [ticketHash],
    );
    return rows[0]?.key_id ?? null;
  }

  /**
   * Takes the ticket: its row is deleted in the same statement that reads it, so of two replicas
   * redeeming it at once exactly one gets the key. Null when unknown, already used or expired.
   */
  async consume(ticketHash: string): Promise<string | null> {
    // a CTE so the driver answers rows (a bare DELETE … RETURNING comes back as [rows, count])
    const rows = await this.tickets.query<Array<{ key_id: string; valid: boolean }>>(
      `WITH taken AS (DELETE FROM stream_tickets WHERE ticket_hash = $1 RETURNING key_id, expires_at > now() AS valid) SELECT key_id, valid FROM taken`,
      [ticketHash],
    );
    const row = rows[0];
    return row?.valid ? row.key_id : null;
  }

  /** Tickets nobody redeemed in time. */
  async deleteExpired(): Promise<void> {
    await this.tickets.query(`DELETE FROM stream_tickets WHERE expires_at < now()`);
  }
}
