import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Upstream voice deletions kept until the provider accepts them. The database queues one whenever a custom voice
 * row is deleted, by its own delete or by its key's cascade, in the same statement: no voice leaves this service
 * without its removal upstream being recorded.
 */
export class VoiceRemovals1796085361000 implements MigrationInterface {
  name = 'VoiceRemovals1796085361000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "voice_removals" (
      "provider" text NOT NULL,
      "upstream_voice_id" text NOT NULL,
      "method" text NOT NULL,
      "upstream_consent_id" text,
      "attempts" integer NOT NULL DEFAULT 0,
      "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "last_error" text,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_voice_removals" PRIMARY KEY ("provider", "upstream_voice_id"))`);
    await q.query(`CREATE INDEX "voice_removals_due" ON "voice_removals" ("next_attempt_at")`);
    await q.query(`CREATE FUNCTION "svc_queue_voice_removal"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "voice_removals" ("provider", "upstream_voice_id", "method", "upstream_consent_id")
        VALUES (OLD."provider", OLD."upstream_voice_id", OLD."method", OLD."upstream_consent_id")
        ON CONFLICT DO NOTHING;
        RETURN OLD;
      END $$`);
    await q.query(`CREATE TRIGGER "custom_voices_queue_removal" AFTER DELETE ON "custom_voices"
      FOR EACH ROW EXECUTE FUNCTION "svc_queue_voice_removal"()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "custom_voices_queue_removal" ON "custom_voices"`);
    await q.query(`DROP FUNCTION "svc_queue_voice_removal"()`);
    await q.query(`DROP TABLE "voice_removals"`);
  }
}
