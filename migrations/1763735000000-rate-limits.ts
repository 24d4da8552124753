import { MigrationInterface, QueryRunner } from 'typeorm';

export class RateLimits1763735000000 implements MigrationInterface {
  name = 'RateLimits1763735000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "rate_limit_counters" (
      "key_id" text NOT NULL,
      "window_start" bigint NOT NULL,
      "count" integer NOT NULL,
      CONSTRAINT "PK_rate_limit_counters" PRIMARY KEY ("key_id", "window_start"))`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "rate_limit_counters"`);
  }
}
