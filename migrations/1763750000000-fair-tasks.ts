import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Async speech tasks are claimed fairly across keys: each claim is stamped, so the next turn goes to the
 * key claimed least recently, and a task that failed waits out its retry delay before anyone claims it.
 */
export class FairTasks1763750000000 implements MigrationInterface {
  name = 'FairTasks1763750000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "speech_tasks" ADD "claimed_at" TIMESTAMP WITH TIME ZONE`);
    await q.query(`ALTER TABLE "speech_tasks" ADD "run_after" TIMESTAMP WITH TIME ZONE`);
    // the best stamp older tasks have: when they were first claimed
    await q.query(`UPDATE "speech_tasks" SET "claimed_at" = "started_at" WHERE "started_at" IS NOT NULL`);
    await q.query(`CREATE INDEX "speech_tasks_key_claimed" ON "speech_tasks" ("key_id", "claimed_at")`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "speech_tasks_key_claimed"`);
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "run_after"`);
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "claimed_at"`);
  }
}
