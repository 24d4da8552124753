import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, QueryFailedError, Repository } from 'typeorm';
import { ConsentRecordingEntity, VoiceConsentEntity } from './voice-consent.entity';

/** PostgreSQL's foreign_key_violation. */
const FOREIGN_KEY_VIOLATION = '23503';

export type NewConsent = Pick<
  VoiceConsentEntity,
  'id' | 'keyId' | 'name' | 'language' | 'recordingType' | 'recordingSize'
>;

@Injectable()
export class ConsentsRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(VoiceConsentEntity) private readonly consents: Repository<VoiceConsentEntity>,
    @InjectRepository(ConsentRecordingEntity) private readonly recordings: Repository<ConsentRecordingEntity>,
  ) {}

  /**
   * The consent and its recording are written together or not at all; null when the key already holds
   * `limit` consents. A per-key transaction lock makes concurrent creates (on any replica) count one after another.
   */
  insertWithinLimit(consent: NewConsent, recording: Buffer, limit: number): Promise<VoiceConsentEntity | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`voice_consents:${consent.keyId}`]);
      if ((await manager.countBy(VoiceConsentEntity, { keyId: consent.keyId })) >= limit) return null;
      const row = await manager.save(manager.create(VoiceConsentEntity, consent));
      await manager.insert(ConsentRecordingEntity, { consentId: row.id, data: recording });
      return row;
    });
  }

  findOwned(keyId: string, id: string): Promise<VoiceConsentEntity | null> {
    return this.consents.findOneBy({ id, keyId });
  }

  async rename(keyId: string, id: string, name: string): Promise<VoiceConsentEntity | null> {
    const result = await this.consents.update({ id, keyId }, { name });
    return result.affected ? this.findOwned(keyId, id) : null;
  }

  /**
   * `in_use` when a custom voice depends on the consent: the database's foreign key refuses the delete in
   * the same statement, so a voice being stored at the same moment can never lose its consent.
   */
  async delete(keyId: string, id: string): Promise<'deleted' | 'missing' | 'in_use'> {
    try {
      const result = await this.consents
        .createQueryBuilder()
        .delete()
        .where('id = :id AND key_id = :keyId', { id, keyId })
        // the usual refusal without a failed statement; the foreign key still decides a race with a voice being stored
        .andWhere('NOT EXISTS (SELECT 1 FROM custom_voices v WHERE v.consent_id = voice_consents.id)')
        .execute();
      if ((result.affected ?? 0) > 0) return 'deleted';
    } catch (err) {
      if (err instanceof QueryFailedError && (err.driverError as { code?: unknown }).code === FOREIGN_KEY_VIOLATION)
        return 'in_use';
      throw err;
    }
    return (await this.findOwned(keyId, id)) ? 'in_use' : 'missing';
  }

  /**
   * Newest first; equal timestamps are ordered by insertion, so pages never skip or repeat.
   * The cursor row is compared in SQL (not through a JS Date, which would drop microseconds).
   */
  listPage(keyId: string, after: string | null, take: number): Promise<VoiceConsentEntity[]> {
    const query = this.consents
      .createQueryBuilder('c')
      .where('c.key_id = :keyId', { keyId })
      .orderBy('c.created_at', 'DESC')
      .addOrderBy('c.seq', 'DESC')
      .take(take);
    if (after) {
      query.andWhere(
        '(c.created_at, c.seq) < (SELECT a.created_at, a.seq FROM voice_consents a WHERE a.id = :after AND a.key_id = :keyId)',
        { after },
      );
    }
    return query.getMany();
  }

  async recording(keyId: string, id: string): Promise<{ type: string; data: Buffer } | null> {
    const row = await this.consents
      .createQueryBuilder('c')
      .innerJoin(ConsentRecordingEntity, 'r', 'r.consent_id = c.id')
      .select(['c.recording_type AS type', 'r.data AS data'])
      .where('c.id = :id AND c.key_id = :keyId', { id, keyId })
      .getRawOne<{ type: string; data: Buffer }>();
    return row ?? null;
  }
}
