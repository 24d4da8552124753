import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { QueryFailedError, Repository } from 'typeorm';
import { CustomVoiceEntity } from './custom-voice.entity';

export type NewCustomVoice = Omit<CustomVoiceEntity, 'createdAt' | 'seq' | 'key' | 'consent'>;

/** PostgreSQL's foreign_key_violation. */
const FOREIGN_KEY_VIOLATION = '23503';

const violates = (err: unknown, constraint: string): boolean => {
  if (!(err instanceof QueryFailedError)) return false;
  const driverError = err.driverError as { code?: unknown; constraint?: unknown };
  return driverError.code === FOREIGN_KEY_VIOLATION && driverError.constraint === constraint;
};

@Injectable()
export class CustomVoicesRepository {
  constructor(@InjectRepository(CustomVoiceEntity) private readonly voices: Repository<CustomVoiceEntity>) {}

  /**
   * Null when the consent is gone by now: the foreign key decides, in the same statement, so a consent
   * deleted while its voice was being cloned can never end up behind a stored voice.
   */
  async insert(voice: NewCustomVoice): Promise<CustomVoiceEntity | null> {
    try {
      return await this.voices.save(this.voices.create(voice));
    } catch (err) {
      if (violates(err, 'FK_custom_voices_consent')) return null;
      throw err;
    }
  }

  findById(id: string): Promise<CustomVoiceEntity | null> {
    return this.voices.findOneBy({ id });
  }

  findOwned(keyId: string, id: string): Promise<CustomVoiceEntity | null> {
    return this.voices.findOneBy({ id, keyId });
  }

  /** Newest first. */
  listOwned(keyId: string): Promise<CustomVoiceEntity[]> {
    return this.voices.find({ where: { keyId }, order: { createdAt: 'DESC', seq: 'DESC' } });
  }

  /**
   * The deleted row, or null when the key has no such voice (or a concurrent delete took it). The delete also queues
   * the voice's removal upstream, in the same statement (the trigger custom_voices_queue_removal, as for a key's voices).
   */
  async deleteOwned(keyId: string, id: string): Promise<CustomVoiceEntity | null> {
    const row = await this.findOwned(keyId, id);
    if (!row) return null;
    const result = await this.voices.delete({ id, keyId });
    return result.affected ? row : null;
  }
}
