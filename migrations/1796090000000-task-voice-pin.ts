import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An async task keeps one voice (decisions §7): the step that spoke its first chunk is its pin, each chunk that
 * step fails keeps the time of its first failure (the pin wait outlives a restart), the task lists the switches
 * it had to make, and the request's `voice_switch` says whether it may make any.
 */
export class TaskVoicePin1796090000000 implements MigrationInterface {
  name = 'TaskVoicePin1796090000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "speech_tasks" ADD "voice_switch" text NOT NULL DEFAULT 'allowed'`);
    await q.query(`ALTER TABLE "speech_tasks" ADD "voice_pin" jsonb`);
    await q.query(`ALTER TABLE "speech_tasks" ADD "pin_waits" jsonb NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE "speech_tasks" ADD "voice_switches" jsonb NOT NULL DEFAULT '[]'`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "voice_switches"`);
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "pin_waits"`);
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "voice_pin"`);
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "voice_switch"`);
  }
}
