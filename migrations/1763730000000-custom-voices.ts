import { MigrationInterface, QueryRunner } from 'typeorm';

export class CustomVoices1763730000000 implements MigrationInterface {
  name = 'CustomVoices1763730000000';

  public async up(q: QueryRunner): Promise<void> {
    // consent_id: NO ACTION (not RESTRICT) so that deleting a key, which cascades to both its consents and
    // its voices in one statement, still works; a consent deleted on its own is refused while a voice uses it
    await q.query(`CREATE TABLE "custom_voices" (
      "id" text NOT NULL,
      "key_id" text NOT NULL,
      "consent_id" text,
      "name" text NOT NULL,
      "method" text NOT NULL,
      "prompt" text,
      "provider" text NOT NULL,
      "upstream_voice_id" text NOT NULL,
      "upstream_consent_id" text,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "seq" BIGSERIAL NOT NULL,
      CONSTRAINT "UQ_custom_voices_seq" UNIQUE ("seq"),
      CONSTRAINT "PK_custom_voices" PRIMARY KEY ("id"),
      CONSTRAINT "FK_custom_voices_key" FOREIGN KEY ("key_id") REFERENCES "proxy_keys"("id") ON DELETE CASCADE,
      CONSTRAINT "FK_custom_voices_consent" FOREIGN KEY ("consent_id") REFERENCES "voice_consents"("id") ON DELETE NO ACTION)`);
    await q.query(`CREATE INDEX "custom_voices_key_order" ON "custom_voices" ("key_id", "created_at", "seq")`);
    await q.query(`CREATE INDEX "custom_voices_consent" ON "custom_voices" ("consent_id")`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "custom_voices"`);
  }
}
