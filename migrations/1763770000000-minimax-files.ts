import { MigrationInterface, QueryRunner } from 'typeorm';

/** Files of the MiniMax-native surface: clients' uploads for voice cloning, and T2A audio served by an unguessable link. */
export class MiniMaxFiles1763770000000 implements MigrationInterface {
  name = 'MiniMaxFiles1763770000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE "minimax_files" (
      "id" BIGSERIAL NOT NULL,
      "key_id" text NOT NULL,
      "purpose" text NOT NULL,
      "filename" text NOT NULL,
      "content_type" text NOT NULL,
      "bytes" integer NOT NULL,
      "data" bytea NOT NULL,
      "link_hash" text,
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      CONSTRAINT "PK_minimax_files" PRIMARY KEY ("id"),
      CONSTRAINT "FK_minimax_files_key" FOREIGN KEY ("key_id") REFERENCES "proxy_keys"("id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX "minimax_files_expires" ON "minimax_files" ("expires_at")`);
    await q.query(`CREATE INDEX "minimax_files_key" ON "minimax_files" ("key_id")`);
    await q.query(`CREATE UNIQUE INDEX "minimax_files_link" ON "minimax_files" ("link_hash")`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "minimax_files"`);
  }
}
