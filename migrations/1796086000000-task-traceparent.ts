import { MigrationInterface, QueryRunner } from 'typeorm';

/** The W3C traceparent of the request that created an async speech task: its worker's spans link to it (decisions §12). */
export class TaskTraceparent1796086000000 implements MigrationInterface {
  name = 'TaskTraceparent1796086000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "speech_tasks" ADD "traceparent" text`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "speech_tasks" DROP COLUMN "traceparent"`);
  }
}
