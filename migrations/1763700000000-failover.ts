import { MigrationInterface, QueryRunner } from 'typeorm';

export class Failover1763700000000 implements MigrationInterface {
  name = 'Failover1763700000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "provider_circuits" (
      "provider" text NOT NULL,
      "status" text NOT NULL,
      "consecutive_failures" integer NOT NULL,
      "open_until" bigint,
      "version" bigint NOT NULL,
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_provider_circuits" PRIMARY KEY ("provider"))`);
    await q.query(`CREATE TABLE "gateway_events" (
      "id" text NOT NULL,
      "type" text NOT NULL,
      "key_id" text,
      "provider" text NOT NULL,
      "data" jsonb NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_gateway_events" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "gateway_events_created" ON "gateway_events" ("created_at")`);
    await q.query(`CREATE TABLE "usage_records" (
      "id" BIGSERIAL NOT NULL,
      "request_id" text NOT NULL,
      "key_id" text NOT NULL,
      "capability" text NOT NULL,
      "requested_model" text NOT NULL,
      "provider" text,
      "model" text,
      "fallback_level" integer,
      "status" integer NOT NULL,
      "latency_ms" integer NOT NULL,
      "attempts" jsonb NOT NULL,
      "prompt_tokens" integer,
      "completion_tokens" integer,
      "total_tokens" integer,
      "characters" integer,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_usage_records" PRIMARY KEY ("id"))`);
    await q.query(`CREATE INDEX "usage_records_key_request" ON "usage_records" ("key_id", "request_id")`);
    await q.query(`CREATE TABLE "usage_counters" (
      "counter" text NOT NULL,
      "per" text NOT NULL,
      "window_start" bigint NOT NULL,
      "count" integer NOT NULL,
      CONSTRAINT "PK_usage_counters" PRIMARY KEY ("counter", "per", "window_start"))`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "usage_counters"`);
    await q.query(`DROP TABLE "usage_records"`);
    await q.query(`DROP TABLE "gateway_events"`);
    await q.query(`DROP TABLE "provider_circuits"`);
  }
}
