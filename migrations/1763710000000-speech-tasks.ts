import { MigrationInterface, QueryRunner } from 'typeorm';

export class SpeechTasks1763710000000 implements MigrationInterface {
  name = 'SpeechTasks1763710000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "speech_tasks" (
      "id" text NOT NULL,
      "key_id" text NOT NULL,
      "status" text NOT NULL,
      "model" text NOT NULL,
      "job" jsonb NOT NULL,
      "plan" jsonb NOT NULL,
      "characters" integer NOT NULL,
      "characters_done" integer NOT NULL DEFAULT 0,
      "chunks_total" integer NOT NULL,
      "chunks_done" integer NOT NULL DEFAULT 0,
      "provider" text,
      "fallback_level" integer,
      "audio" jsonb,
      "error" jsonb,
      "attempts" integer NOT NULL DEFAULT 0,
      "worker_id" text,
      "heartbeat_at" TIMESTAMP WITH TIME ZONE,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "started_at" TIMESTAMP WITH TIME ZONE,
      "completed_at" TIMESTAMP WITH TIME ZONE,
      "expires_at" TIMESTAMP WITH TIME ZONE,
      CONSTRAINT "PK_speech_tasks" PRIMARY KEY ("id"),
      CONSTRAINT "FK_speech_tasks_key" FOREIGN KEY ("key_id") REFERENCES "proxy_keys"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX "speech_tasks_key" ON "speech_tasks" ("key_id")`);
    await q.query(`CREATE INDEX "speech_tasks_status_heartbeat" ON "speech_tasks" ("status", "heartbeat_at")`);
    await q.query(`CREATE INDEX "speech_tasks_status_expires" ON "speech_tasks" ("status", "expires_at")`);
    await q.query(`CREATE TABLE "speech_task_chunks" (
      "task_id" text NOT NULL,
      "idx" integer NOT NULL,
      "pcm" bytea NOT NULL,
      "provider" text NOT NULL,
      "fallback_level" integer NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_speech_task_chunks" PRIMARY KEY ("task_id", "idx"),
      CONSTRAINT "FK_speech_task_chunks_task" FOREIGN KEY ("task_id") REFERENCES "speech_tasks"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE TABLE "speech_task_results" (
      "task_id" text NOT NULL,
      "part" integer NOT NULL,
      "data" bytea NOT NULL,
      CONSTRAINT "PK_speech_task_results" PRIMARY KEY ("task_id", "part"),
      CONSTRAINT "FK_speech_task_results_task" FOREIGN KEY ("task_id") REFERENCES "speech_tasks"("id") ON DELETE CASCADE)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "speech_task_results"`);
    await q.query(`DROP TABLE "speech_task_chunks"`);
    await q.query(`DROP TABLE "speech_tasks"`);
  }
}
