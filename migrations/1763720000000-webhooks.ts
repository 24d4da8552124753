import { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1763720000000 implements MigrationInterface {
  name = 'Webhooks1763720000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "webhook_endpoints" (
      "id" text NOT NULL,
      "key_id" text NOT NULL,
      "url" text NOT NULL,
      "events" text array NOT NULL,
      "enabled" boolean NOT NULL DEFAULT true,
      "secret" text NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "seq" BIGSERIAL NOT NULL,
      CONSTRAINT "UQ_webhook_endpoints_seq" UNIQUE ("seq"),
      CONSTRAINT "PK_webhook_endpoints" PRIMARY KEY ("id"),
      CONSTRAINT "FK_webhook_endpoints_key" FOREIGN KEY ("key_id") REFERENCES "proxy_keys"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX "webhook_endpoints_key_order" ON "webhook_endpoints" ("key_id", "created_at", "seq")`);
    await q.query(`CREATE TABLE "webhook_deliveries" (
      "id" text NOT NULL,
      "endpoint_id" text NOT NULL,
      "event_id" text NOT NULL,
      "event" text NOT NULL,
      "payload" text NOT NULL,
      "status" text NOT NULL,
      "attempts" integer NOT NULL DEFAULT 0,
      "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "locked_until" TIMESTAMP WITH TIME ZONE,
      "claim" text,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "UQ_webhook_deliveries_endpoint_event" UNIQUE ("endpoint_id", "event_id"),
      CONSTRAINT "PK_webhook_deliveries" PRIMARY KEY ("id"),
      CONSTRAINT "FK_webhook_deliveries_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at")`);
    await q.query(`CREATE TABLE "webhook_delivery_attempts" (
      "id" text NOT NULL,
      "delivery_id" text NOT NULL,
      "endpoint_id" text NOT NULL,
      "event_id" text NOT NULL,
      "event" text NOT NULL,
      "attempt" integer NOT NULL,
      "status_code" integer,
      "latency_ms" integer,
      "error" text,
      "response_snippet" text,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "seq" BIGSERIAL NOT NULL,
      CONSTRAINT "UQ_webhook_delivery_attempts_seq" UNIQUE ("seq"),
      CONSTRAINT "UQ_webhook_delivery_attempts_attempt" UNIQUE ("delivery_id", "attempt"),
      CONSTRAINT "PK_webhook_delivery_attempts" PRIMARY KEY ("id"),
      CONSTRAINT "FK_webhook_delivery_attempts_delivery" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE,
      CONSTRAINT "FK_webhook_delivery_attempts_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE)`);
    await q.query(
      `CREATE INDEX "webhook_delivery_attempts_endpoint_order" ON "webhook_delivery_attempts" ("endpoint_id", "created_at", "seq")`,
    );
    await q.query(`CREATE TABLE "webhook_fanout_events" (
      "event_id" text NOT NULL,
      "event_created_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      CONSTRAINT "PK_webhook_fanout_events" PRIMARY KEY ("event_id"))`);
    await q.query(`CREATE INDEX "webhook_fanout_events_created" ON "webhook_fanout_events" ("event_created_at")`);
    await q.query(`CREATE TABLE "webhook_fanout_state" (
      "id" smallint NOT NULL,
      "watermark" TIMESTAMP WITH TIME ZONE NOT NULL,
      CONSTRAINT "PK_webhook_fanout_state" PRIMARY KEY ("id"))`);
    // events stored before webhooks existed had no endpoint to reach: start from now
    await q.query(`INSERT INTO "webhook_fanout_state" ("id", "watermark") VALUES (1, now())`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "webhook_fanout_state"`);
    await q.query(`DROP TABLE "webhook_fanout_events"`);
    await q.query(`DROP TABLE "webhook_delivery_attempts"`);
    await q.query(`DROP TABLE "webhook_deliveries"`);
    await q.query(`DROP TABLE "webhook_endpoints"`);
  }
}
