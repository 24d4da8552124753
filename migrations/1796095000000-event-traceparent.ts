import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The W3C traceparent of the request that caused a failover or recovery event, kept on the event and copied to
 * each of its deliveries: the delivery worker's spans link to it (decisions §12). Null while traces are off.
 */
export class EventTraceparent1796095000000 implements MigrationInterface {
  name = 'EventTraceparent1796095000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway_events" ADD "traceparent" text`);
    await q.query(`ALTER TABLE "webhook_deliveries" ADD "traceparent" text`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_deliveries" DROP COLUMN "traceparent"`);
    await q.query(`ALTER TABLE "gateway_events" DROP COLUMN "traceparent"`);
  }
}
