import { Injectable } from '@nestjs/common';
import { DomainError, notFound } from '../common/errors/domain-error';
import { newId, randomBase62 } from '../common/ids';
import { sniffAudioType } from '../consents/audio-type';
import { ConsentsService } from '../consents/consents.service';
import type { VoiceConsentDto } from '../consents/dto/voice-consent.dto';
import type { UpstreamVoice } from '../providers/provider-adapter';
import type { AuthenticatedKey } from '../keys/key-directory';
import { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoiceDirectory } from './custom-voice-directory';
import { CustomVoicesRepository, NewCustomVoice } from './custom-voices.repository';
import { CreateVoiceDto, CustomVoiceDeletedDto, CustomVoiceDto } from './dto/custom-voice.dto';
import { checkSample, fileNameFor } from './voice-sample';
import { VoiceRemovals } from './voice-removals';
import { VoiceUpstream } from './voice-upstream';

/** The largest sample any provider takes (MiniMax: 20 MiB); each provider's own limit is checked after. */
export const MAX_SAMPLE_BYTES = 20 * 1024 * 1024;
/** What a designed voice reads for its trial clip when the SDK's `script_hint` is absent. */
const DEFAULT_PREVIEW_TEXT = 'Hello! This is a preview of my new voice.';

export interface UploadedSample {
  buffer: Buffer;
  size: number;
}

export interface VoiceDesign {
  name: string;
  prompt: string;
  previewText: string;
}

export const toVoiceDto = (row: CustomVoiceEntity): CustomVoiceDto => ({
  id: row.id,
  object: 'audio.voice',
  name: row.name,
  type: row.method === 'clone' ? 'audio_sample' : 'prompt',
  consent_id: row.consentId,
  provider: row.provider,
  created_at: Math.floor(row.createdAt.getTime() / 1000),
  ...(row.prompt !== null ? { prompt: row.prompt } : {}),
});

const voiceNotFound = (id: string): DomainError => notFound('custom voice', id, 'voice_id');
const consentNotFound = (id: string): DomainError => notFound('voice consent', id, 'consent');
/** An id MiniMax accepts (a letter first, 8..256 letters and digits) and nobody can guess. */
const upstreamVoiceId = (): string => `svc${randomBase62(24)}`;

/**
 * Custom voices of one key. A cloned voice exists only with a consent of the same key behind it: the
 * consent is checked before any upstream call, and the database's foreign key keeps it from being
 * deleted while the voice exists. Each voice is made on one provider (no failover: it lives where it was made).
 */
@Injectable()
export class CustomVoicesService {
  constructor(
    private readonly repository: CustomVoicesRepository,
    private readonly directory: CustomVoiceDirectory,
    private readonly consents: ConsentsService,
    private readonly upstream: VoiceUpstream,
    private readonly removals: VoiceRemovals,
  ) {}

  /**
   * `POST /v1/audio/voices`: a clone from `audio_sample`, or (SDK `type: prompt`) a design. `requestId` (here and
   * below): the request served, named on what is logged about its upstream calls.
   */
  async create(
    key: AuthenticatedKey,
    form: CreateVoiceDto,
    sample: UploadedSample | undefined,
    requestId: string,
  ): Promise<CustomVoiceDto> {
    if (form.type === 'prompt') {
      if (sample)
        throw new DomainError(
          'invalid_value',
          "A voice of type 'prompt' is designed from 'prompt'; it takes no 'audio_sample'.",
          { param: 'audio_sample' },
        );
      if (form.consent !== undefined)
        throw new DomainError('invalid_value', "A voice of type 'prompt' needs no consent; leave 'consent' out.", {
          param: 'consent',
        });
      if (!form.prompt) throw new DomainError('missing_field', "Missing required field 'prompt'.", { param: 'prompt' });
      return this.design(
        key,
        { name: form.name, prompt: form.prompt, previewText: form.script_hint ?? DEFAULT_PREVIEW_TEXT },
        requestId,
      );
    }
    for (const field of ['prompt', 'script_hint'] as const) {
      if (form[field] !== undefined)
        throw new DomainError('invalid_value', `'${field}' is only used with type 'prompt'.`, { param: field });
    }
    return this.clone(key, form, sample, requestId);
  }

  private async clone(
    key: AuthenticatedKey,
    form: CreateVoiceDto,
    sample: UploadedSample | undefined,
    requestId: string,
  ): Promise<CustomVoiceDto> {
    if (!form.consent)
      throw new DomainError(
        'missing_field',
        "Missing required field 'consent': a voice is cloned only with a consent recording behind it.",
        { param: 'consent' },
      );
    if (!sample)
      throw new DomainError('missing_field', "Missing required file 'audio_sample'.", { param: 'audio_sample' });
    // the consent gate comes first: no consent of this key, no upstream call
    const consent = await this.consentOf(key.id, form.consent);
    const { provider, adapter } = this.upstream.providerFor(key, 'clone');
    if (!adapter.cloneVoice) throw new Error(`${provider} cannot clone`);
    if (sample.size > MAX_SAMPLE_BYTES)
      throw new DomainError('file_too_large', 'The sample is larger than the 20 MiB limit.', { param: 'audio_sample' });
    const type = await sniffAudioType(sample.buffer);
    if (!type)
      throw new DomainError('unsupported_media_type', 'The sample is not audio in a supported format.', {
        param: 'audio_sample',
      });
    if (adapter.voiceSampleRules) checkSample(provider, adapter.voiceSampleRules, sample.buffer, type);
    const recording = await this.consentGate(consent.id, () => this.consents.recording(key.id, consent.id));

    const clone = adapter.cloneVoice.bind(adapter);
    const made = await this.upstream.call(provider, 'clone', requestId, (signal) =>
      clone(
        {
          voiceId: upstreamVoiceId(),
          name: form.name,
          sample: { data: sample.buffer, contentType: type, filename: fileNameFor(type, 'sample') },
          consent: {
            recording: {
              data: recording.data,
              contentType: recording.type,
              filename: fileNameFor(recording.type, 'consent'),
            },
            language: consent.language,
            name: consent.name,
          },
        },
        signal,
      ),
    );
    const row = await this.store({ ...this.newRow(key, form.name, provider, made), consentId: consent.id });
    if (!row) {
      // the consent was deleted while the voice was being made: the voice must not outlive it
      await this.removals.removeUnstored(
        { provider, upstreamVoiceId: made.voiceId, method: made.method, upstreamConsentId: made.consentId ?? null },
        requestId,
      );
      throw consentNotFound(consent.id);
    }
    return toVoiceDto(row);
  }

  /** Designs a voice from a description. No consent: nobody's real voice is reproduced (README, "Custom voices"). */
  async design(key: AuthenticatedKey, design: VoiceDesign, requestId: string): Promise<CustomVoiceDto> {
    const { provider, adapter } = this.upstream.providerFor(key, 'design');
    if (!adapter.designVoice) throw new Error(`${provider} cannot design`);
    const designVoice = adapter.designVoice.bind(adapter);
    const made = await this.upstream.call(provider, 'design', requestId, (signal) =>
      designVoice({ voiceId: upstreamVoiceId(), prompt: design.prompt, previewText: design.previewText }, signal),
    );
    const row = await this.store({
      ...this.newRow(key, design.name, provider, made),
      consentId: null,
      prompt: design.prompt,
    });
    if (!row) throw new Error('a designed voice has no consent to lose');
    return toVoiceDto(row);
  }

  async get(keyId: string, id: string): Promise<CustomVoiceDto> {
    const row = await this.repository.findOwned(keyId, id);
    if (!row) throw voiceNotFound(id);
    return toVoiceDto(row);
  }

  /** Newest first. */
  async list(keyId: string): Promise<CustomVoiceDto[]> {
    return (await this.repository.listOwned(keyId)).map(toVoiceDto);
  }

  /**
   * Removes the voice here at once (its consent is free again), then at its provider: the database queued that
   * removal with the delete, and a failed one is tried again until the provider accepts (VoiceRemovals).
   */
  async delete(keyId: string, id: string, requestId: string): Promise<CustomVoiceDeletedDto> {
    const row = await this.repository.deleteOwned(keyId, id);
    if (!row) throw voiceNotFound(id);
    await this.directory.changed(id);
    await this.removals.removeDeleted(
      {
        provider: row.provider,
        upstreamVoiceId: row.upstreamVoiceId,
        method: row.method,
        upstreamConsentId: row.upstreamConsentId,
      },
      requestId,
    );
    return { id, deleted: true, object: 'audio.voice.deleted' };
  }

  private newRow(
    key: AuthenticatedKey,
    name: string,
    provider: string,
    made: UpstreamVoice,
  ): Omit<NewCustomVoice, 'consentId'> {
    return {
      id: newId('voice'),
      keyId: key.id,
      name,
      method: made.method,
      prompt: null,
      provider,
      upstreamVoiceId: made.voiceId,
      upstreamConsentId: made.consentId ?? null,
    };
  }

  private async store(voice: NewCustomVoice): Promise<CustomVoiceEntity | null> {
    const row = await this.repository.insert(voice);
    if (row) await this.directory.changed(row.id);
    return row;
  }

  private consentOf(keyId: string, id: string): Promise<VoiceConsentDto> {
    return this.consentGate(id, () => this.consents.get(keyId, id));
  }

  /** A consent that is missing, another key's or deleted: 404 naming the `consent` field. */
  private async consentGate<T>(id: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (err instanceof DomainError && err.code === 'resource_not_found') throw consentNotFound(id);
      throw err;
    }
  }
}
