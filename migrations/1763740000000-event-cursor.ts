import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook fan-out follows a cursor over (inserting transaction id, event id) instead of re-scanning the
 * last 30 s of events against a table of markers: a scan that grew with the event rate, which is highest
 * exactly while a provider is failing.
 */
export class EventCursor1763740000000 implements MigrationInterface {
  name = 'EventCursor1763740000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway_events" ADD "txid" bigint NOT NULL DEFAULT txid_current()`);
    // events already fanned out sort before the cursor (txid 0), those still waiting after it (txid 2);
    // real transaction ids are larger than both
    await q.query(
      `UPDATE "gateway_events" e SET "txid" = CASE
         WHEN e."created_at" < s."watermark" OR EXISTS (SELECT 1 FROM "webhook_fanout_events" f WHERE f."event_id" = e."id") THEN 0 ELSE 2 END
         FROM "webhook_fanout_state" s WHERE s."id" = 1`,
    );
    await q.query(`CREATE INDEX "gateway_events_txid" ON "gateway_events" ("txid", "id")`);
    await q.query(`ALTER TABLE "webhook_fanout_state" ADD "cursor_txid" bigint NOT NULL DEFAULT '1'`);
    await q.query(`ALTER TABLE "webhook_fanout_state" ADD "cursor_id" text NOT NULL DEFAULT ''`);
    await q.query(`ALTER TABLE "webhook_fanout_state" DROP COLUMN "watermark"`);
    await q.query(`DROP TABLE "webhook_fanout_events"`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "webhook_fanout_events" (
      "event_id" text NOT NULL,
      "event_created_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      CONSTRAINT "PK_webhook_fanout_events" PRIMARY KEY ("event_id"))`);
    await q.query(`CREATE INDEX "webhook_fanout_events_created" ON "webhook_fanout_events" ("event_created_at")`);
    await q.query(`ALTER TABLE "webhook_fanout_state" ADD "watermark" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()`);
    await q.query(`ALTER TABLE "webhook_fanout_state" ALTER COLUMN "watermark" DROP DEFAULT`);
    await q.query(`ALTER TABLE "webhook_fanout_state" DROP COLUMN "cursor_id"`);
    await q.query(`ALTER TABLE "webhook_fanout_state" DROP COLUMN "cursor_txid"`);
    await q.query(`DROP INDEX "gateway_events_txid"`);
    await q.query(`ALTER TABLE "gateway_events" DROP COLUMN "txid"`);
  }
}
