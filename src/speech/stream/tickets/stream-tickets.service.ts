import { Injectable } from '@nestjs/common';
import { newId } from '../../../common/ids';
import { AuthenticatedKey, hashSecret, KeyDirectory } from '../../../keys/key-directory';
import { StreamTicketDto } from './stream-ticket.dto';
import { StreamTicketsRepository } from './stream-tickets.repository';

/** How long a ticket may wait for its upgrade. */
export const TICKET_TTL_SECONDS = 60;
/** Random part of a ticket: 32 base62 characters, about 190 bits. */
const TICKET_LENGTH = 32;

/**
 * Single-use tickets for the speech WebSocket (decisions §10): a browser asks for one with its key in
 * the header, then opens the socket with `?ticket=`, so the key itself is never in a URL. Only the
 * ticket's hash is stored, in the shared database: whichever replica gets the socket redeems it, and only once.
 */
@Injectable()
export class StreamTicketsService {
  constructor(
    private readonly repository: StreamTicketsRepository,
    private readonly keys: KeyDirectory,
  ) {}

  async issue(key: AuthenticatedKey): Promise<StreamTicketDto> {
    const ticket = newId('wst', TICKET_LENGTH);
    const expiresAt = new Date(Date.now() + TICKET_TTL_SECONDS * 1000);
    // the table only ever holds the last minute's tickets
    await this.repository.deleteExpired();
    await this.repository.insert(hashSecret(ticket), key.id, expiresAt);
    return { object: 'speech.stream.ticket', ticket, expires_at: Math.floor(expiresAt.getTime() / 1000) };
  }

  /** The key a ticket was issued to, as it is now, the ticket left unspent; null when unknown, used, expired, or its key was deleted. */
  async holder(ticket: string): Promise<AuthenticatedKey | null> {
    const keyId = await this.repository.holder(hashSecret(ticket));
    return keyId ? this.keys.byId(keyId) : null;
  }

  /**
   * Spends the ticket of an upgrade that passed every check: true for exactly one of any number of concurrent
   * spends (on any replica); false when it was used or expired meanwhile.
   */
  async spend(ticket: string, keyId: string): Promise<boolean> {
    return (await this.repository.consume(hashSecret(ticket))) === keyId;
  }
}
