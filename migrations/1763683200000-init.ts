import { MigrationInterface, QueryRunner } from 'typeorm';

export class Init1763683200000 implements MigrationInterface {
  name = 'Init1763683200000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "proxy_keys" (
      "id" text NOT NULL,
      "name" text NOT NULL,
      "secret_hash" text NOT NULL,
      "secret_hint" text NOT NULL,
      "chain" jsonb NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "UQ_proxy_keys_secret_hash" UNIQUE ("secret_hash"),
      CONSTRAINT "PK_proxy_keys" PRIMARY KEY ("id"))`);
    await q.query(`CREATE TABLE "voice_consents" (
      "id" text NOT NULL,
      "key_id" text NOT NULL,
      "name" text NOT NULL,
      "language" text NOT NULL,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "seq" BIGSERIAL NOT NULL,
      "recording_type" text NOT NULL,
      "recording_size" integer NOT NULL,
      CONSTRAINT "UQ_voice_consents_seq" UNIQUE ("seq"),
      CONSTRAINT "PK_voice_consents" PRIMARY KEY ("id"),
      CONSTRAINT "FK_voice_consents_key" FOREIGN KEY ("key_id") REFERENCES "proxy_keys"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX "voice_consents_key_order" ON "voice_consents" ("key_id", "created_at", "seq")`);
    await q.query(`CREATE TABLE "consent_recordings" (
      "consent_id" text NOT NULL,
      "data" bytea NOT NULL,
      CONSTRAINT "PK_consent_recordings" PRIMARY KEY ("consent_id"),
      CONSTRAINT "FK_consent_recordings_consent" FOREIGN KEY ("consent_id") REFERENCES "voice_consents"("id") ON DELETE CASCADE)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "consent_recordings"`);
    await q.query(`DROP TABLE "voice_consents"`);
    await q.query(`DROP TABLE "proxy_keys"`);
  }
}
