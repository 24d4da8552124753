import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { MiniMaxFileEntity } from './minimax-file.entity';

export type NewMiniMaxFile = Pick<
  MiniMaxFileEntity,
  'keyId' | 'purpose' | 'filename' | 'contentType' | 'data' | 'linkHash' | 'expiresAt'
>;

/** The files a quota counts together: a key's uploads (for cloning), or its T2A audio links. */
export type MiniMaxFileKind = 'uploads' | 'links';

/** How many of a kind's unexpired files a key may hold, and how many bytes of them (null: not limited). */
export interface MiniMaxFileLimits {
  files: number;
  bytes: number | null;
}

const kindOf = (purpose: MiniMaxFileEntity['purpose']): MiniMaxFileKind => (purpose === 't2a' ? 'links' : 'uploads');
const KIND_FILTER: Record<MiniMaxFileKind, string> = { uploads: `"purpose" <> 't2a'`, links: `"purpose" = 't2a'` };

/** Expired files removed per statement (they hold audio: short transactions, however far behind the sweep is). */
const SWEEP_BATCH = 500;

@Injectable()
export class MiniMaxFilesRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(MiniMaxFileEntity) private readonly files: Repository<MiniMaxFileEntity>,
  ) {}

  /** How many unexpired files of the kind the key holds, and their bytes. */
  async held(keyId: string, kind: MiniMaxFileKind, manager?: EntityManager): Promise<{ files: number; bytes: number }> {
    const [row] = await (manager ?? this.files.manager).query<Array<{ files: number; bytes: string }>>(
      `SELECT count(*)::int AS "files", COALESCE(sum("bytes"), 0)::text AS "bytes" FROM "minimax_files"
       WHERE "key_id" = $1 AND ${KIND_FILTER[kind]} AND "expires_at" > now()`,
      [keyId],
    );
    return { files: row.files, bytes: Number(row.bytes) };
  }

  /**
   * Stores the file (its id is MiniMax's `file_id`) unless the key's unexpired files of its kind are at
   * `limits`: then which limit. A per-key transaction lock makes concurrent writes (on any replica) count
   * one after another, so they cannot all see room for one more.
   */
  insertWithinLimits(file: NewMiniMaxFile, limits: MiniMaxFileLimits): Promise<MiniMaxFileEntity | 'files' | 'bytes'> {
    const kind = kindOf(file.purpose);
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
        `minimax_files:${kind}:${file.keyId}`,
      ]);
      const held = await this.held(file.keyId, kind, manager);
      if (held.files >= limits.files) return 'files';
      if (limits.bytes !== null && held.bytes + file.data.length > limits.bytes) return 'bytes';
      return this.insert(file, manager);
    });
  }

  private async insert(file: NewMiniMaxFile, manager: EntityManager): Promise<MiniMaxFileEntity> {
    const rows = await manager.query<MiniMaxFileEntity[]>(
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
