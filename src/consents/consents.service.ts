import languageTags from 'language-tags';
import { Injectable } from '@nestjs/common';
import { DomainError, notFound } from '../common/errors/domain-error';
import { newId } from '../common/ids';
import { Page, toPage } from '../common/http/pagination.dto';
import { ACCEPTED_AUDIO, sniffAudioType } from './audio-type';
import { StorageSpace } from '../database/storage-space';
import { StorageQuotas } from '../quotas/storage-quotas';
import { ConsentsRepository } from './consents.repository';
import { CreateVoiceConsentDto, VoiceConsentDeletedDto, VoiceConsentDto } from './dto/voice-consent.dto';
import { VoiceConsentEntity } from './voice-consent.entity';

export const MAX_RECORDING_BYTES = 10 * 1024 * 1024;

export interface UploadedRecording {
  buffer: Buffer;
  size: number;
}

/** A BCP 47 tag in canonical form, or null when it is not a valid tag. */
export function canonicalLanguage(tag: string): string | null {
  const trimmed = tag.trim();
  // well-formed is not enough ('english', 'xx-YY' are): every subtag must be in the IANA registry
  if (!languageTags(trimmed).valid()) return null;
  try {
    const [canonical] = Intl.getCanonicalLocales(trimmed);
    return canonical ?? null;
  } catch {
    return null;
  }
}

const toDto = (row: VoiceConsentEntity): VoiceConsentDto => ({
  id: row.id,
  created_at: Math.floor(row.createdAt.getTime() / 1000),
  language: row.language,
  name: row.name,
  object: 'audio.voice_consent',
});

const consentNotFound = (id: string): DomainError => notFound('voice consent', id, 'consent_id');

/** Voice consent recordings of one key: required before a custom voice is made. */
@Injectable()
export class ConsentsService {
  constructor(
    private readonly repository: ConsentsRepository,
    private readonly quotas: StorageQuotas,
    private readonly space: StorageSpace,
  ) {}

  async create(
    keyId: string,
    form: CreateVoiceConsentDto,
    recording: UploadedRecording | undefined,
  ): Promise<VoiceConsentDto> {
    if (!recording)
      throw new DomainError('missing_field', "Missing required file 'recording'.", { param: 'recording' });
    if (recording.size > MAX_RECORDING_BYTES) {
      throw new DomainError('file_too_large', 'The recording is larger than the 10 MiB limit.', { param: 'recording' });
    }
    const language = canonicalLanguage(form.language);
    if (!language) {
      throw new DomainError('invalid_value', `'${form.language}' is not a valid BCP 47 language tag.`, {
        param: 'language',
      });
    }
    const type = await sniffAudioType(recording.buffer);
    if (!type) {
      throw new DomainError(
        'unsupported_media_type',
        `The recording is not audio in a supported format (${ACCEPTED_AUDIO}).`,
        {
          param: 'recording',
        },
      );
    }
    this.space.assertRoom();
    const row = await this.repository.insertWithinLimit(
      { id: newId('vc'), keyId, name: form.name, language, recordingType: type, recordingSize: recording.size },
      recording.buffer,
      this.quotas.limit('consents'),
    );
    if (!row) throw this.quotas.exceeded('consents');
    return toDto(row);
  }

  async get(keyId: string, id: string): Promise<VoiceConsentDto> {
    const row = await this.repository.findOwned(keyId, id);
    if (!row) throw consentNotFound(id);
    return toDto(row);
  }

  async rename(keyId: string, id: string, name: string): Promise<VoiceConsentDto> {
    const row = await this.repository.rename(keyId, id, name);
    if (!row) throw consentNotFound(id);
    return toDto(row);
  }

  /** Deletes the consent and its recording bytes; refused (409) while a custom voice depends on it. */
  async delete(keyId: string, id: string): Promise<VoiceConsentDeletedDto> {
    const outcome = await this.repository.delete(keyId, id);
    if (outcome === 'missing') throw consentNotFound(id);
    if (outcome === 'in_use') {
      throw new DomainError(
        'consent_in_use',
        `The consent '${id}' is behind a custom voice; delete the voice (DELETE /v1/audio/voices/{voice_id}) first.`,
        {
          param: 'consent_id',
        },
      );
    }
    return { id, deleted: true, object: 'audio.voice_consent' };
  }

  async list(keyId: string, after: string | undefined, limit: number): Promise<Page<VoiceConsentDto>> {
    if (after && !(await this.repository.findOwned(keyId, after))) {
      throw new DomainError('invalid_cursor', `'after' must be the id of one of your consents; '${after}' is not.`, {
        param: 'after',
      });
    }
    const rows = await this.repository.listPage(keyId, after ?? null, limit + 1);
    return toPage(rows.map(toDto), limit);
  }

  async recording(keyId: string, id: string): Promise<{ type: string; data: Buffer }> {
    const recording = await this.repository.recording(keyId, id);
    if (!recording) throw consentNotFound(id);
    return recording;
  }
}
