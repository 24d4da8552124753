import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook lanes shared across keys (decisions §11): deliveries are claimed from their own table in turns per
 * key, and an endpoint that keeps timing out is backed off on its own, in columns every replica reads.
 */
export class WebhookLanes1796083236000 implements MigrationInterface {
  name = 'WebhookLanes1796083236000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_endpoints" ADD "consecutive_timeouts" integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE "webhook_endpoints" ADD "backoff_until" TIMESTAMP WITH TIME ZONE`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_endpoints" DROP COLUMN "backoff_until"`);
    await q.query(`ALTER TABLE "webhook_endpoints" DROP COLUMN "consecutive_timeouts"`);
  }
}
