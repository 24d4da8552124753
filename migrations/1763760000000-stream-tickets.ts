import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Single-use tickets for the speech WebSocket (browsers cannot send a bearer header): only a hash of
 * each is stored, and redeeming one deletes its row, so any replica can take it and none twice.
 */
export class StreamTickets1763760000000 implements MigrationInterface {
  name = 'StreamTickets1763760000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "stream_tickets" (
      "ticket_hash" text NOT NULL,
      "key_id" text NOT NULL,
      "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      CONSTRAINT "PK_stream_tickets" PRIMARY KEY ("ticket_hash"))`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "stream_tickets"`);
  }
}
