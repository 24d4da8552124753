import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { MiniMaxFileEntity } from './minimax-file.entity';

export type NewMiniMaxFile = Pick<
  MiniMaxFileEntity,
  'keyId' | 'purpose' | 'filename' | 'contentType' | 'data' | 'linkHash' | 'expiresAt'
>;

/** Expired files removed per statement (they hold audio: short transactions, however far behind the sweep is). */
const SWEEP_BATCH = 500;

@Injectable()
export class MiniMaxFilesRepository {
  constructor(@InjectRepository(MiniMaxFileEntity) private readonly files: Repository<MiniMaxFileEntity>) {}

  /** Stores the file (its id is MiniMax's `file_id`). */
  async insert(file: NewMiniMaxFile): Promise<MiniMaxFileEntity> {
    const rows = await this.files.query<MiniMaxFileEntity[]>(
      `INSERT INTO "minimax_files" ("key_id", "purpose", "filename", "content_type", "bytes", "data", "link_hash", "expires_at")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING "id", "key_id" AS "keyId", "purpose", "filename", "content_type" AS "contentType", "bytes", "link_hash" AS "linkHash", "created_at" AS "createdAt", "expires_at" AS "expiresAt"`,
      [
        file.keyId,
        file.purpose,
        file.filename,
        file.contentType,
        file.data.length,
        file.data,
        file.linkHash,
        file.expiresAt,
      ],
    );
    return { ...rows[0], id: String(rows[0].id) };
  }

  /** The key's unexpired file, without its bytes. */
  findOwned(keyId: string, id: string): Promise<MiniMaxFileEntity | null> {
    if (!/^\d{1,18}$/.test(id)) return Promise.resolve(null);
    return this.files
      .createQueryBuilder('f')
      .where('f.id = :id AND f.key_id = :keyId AND f.expires_at > now()', { id, keyId })
      .getOne();
  }

  /** The key's unexpired file, with its bytes. */
  findOwnedWithData(keyId: string, id: string): Promise<MiniMaxFileEntity | null> {
    if (!/^\d{1,18}$/.test(id)) return Promise.resolve(null);
    return this.files
      .createQueryBuilder('f')
      .addSelect('f.data')
      .where('f.id = :id AND f.key_id = :keyId AND f.expires_at > now()', { id, keyId })
      .getOne();
  }

  /** The unexpired file behind a download link, with its bytes. */
  findByLink(linkHash: string): Promise<MiniMaxFileEntity | null> {
    return this.files
      .createQueryBuilder('f')
      .addSelect('f.data')
      .where('f.link_hash = :linkHash AND f.expires_at > now()', { linkHash })
      .getOne();
  }

  /** Deletes up to one batch of expired files; how many went. */
  async deleteExpiredBatch(): Promise<{ deleted: number; more: boolean }> {
    const [, deleted] = await this.files.query<[unknown, number]>(
      `DELETE FROM "minimax_files" WHERE "id" IN (SELECT "id" FROM "minimax_files" WHERE "expires_at" <= now() LIMIT ${SWEEP_BATCH})`,
    );
    return { deleted, more: deleted === SWEEP_BATCH };
  }
}
