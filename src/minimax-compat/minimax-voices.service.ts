import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import type { ProxiedCall } from '../failover/proxied-call';
import type { AuthenticatedKey } from '../keys/key-directory';
import { SYNC_TEXT_LIMIT, toSpeechJob } from '../speech/speech-job';
import { VoicesService } from '../voices/voices.service';
import { CustomVoicesService } from '../voices/custom-voices.service';
import type { GetVoiceRequestDto, VoiceCloneRequestDto, VoiceDesignRequestDto } from './dto/voices.dto';
import { BaseResp, MINIMAX_OK } from './minimax-errors';
import { MiniMaxFilesService } from './minimax-files.service';
import { MiniMaxSpeechService } from './minimax-speech.service';

export interface MiniMaxVoice {
  voice_id: string;
  voice_name: string;
  description: string[];
  created_time?: string;
}

export interface GetVoiceResponse {
  system_voice?: MiniMaxVoice[];
  voice_cloning?: MiniMaxVoice[];
  voice_generation?: MiniMaxVoice[];
  base_resp: BaseResp;
}

export interface VoiceCloneResponse {
  input_sensitive: boolean;
  input_sensitive_type: number;
  demo_audio: string;
  /** Gateway extension: the id to speak with (`voice_…`); MiniMax's clients keep using the answer as they do. */
  voice_id: string;
  base_resp: BaseResp;
}

export interface VoiceDesignResponse {
  voice_id: string;
  trial_audio: string;
  base_resp: BaseResp;
}

/** A designed voice without a `voice_id` to be listed under. */
const DESIGNED_NAME = 'designed voice';

const day = (seconds: number | undefined): string =>
  seconds === undefined ? '' : new Date(seconds * 1000).toISOString().slice(0, 10);

/** MiniMax's voice routes over the gateway's voices: the speech module's list, and custom voices behind the consent gate. */
@Injectable()
export class MiniMaxVoicesService {
  constructor(
    private readonly voices: VoicesService,
    private readonly custom: CustomVoicesService,
    private readonly files: MiniMaxFilesService,
    private readonly speech: MiniMaxSpeechService,
  ) {}

  /** `POST /v1/get_voice`: the key's voices under MiniMax's three lists. */
  async list(key: AuthenticatedKey, dto: GetVoiceRequestDto): Promise<GetVoiceResponse> {
    const type = dto.voice_type ?? 'all';
    const all = await this.voices.list(key);
    const answer: GetVoiceResponse = { base_resp: MINIMAX_OK };
    if (type === 'system' || type === 'all') {
      answer.system_voice = all
        .filter((v) => v.type === 'builtin')
        .map((v) => ({ voice_id: v.id, voice_name: v.name, description: v.languages }));
    }
    if (type === 'voice_cloning' || type === 'all') {
      answer.voice_cloning = all
        .filter((v) => v.type === 'audio_sample')
        .map((v) => ({ voice_id: v.id, voice_name: v.name, description: [], created_time: day(v.created_at) }));
    }
    if (type === 'voice_generation' || type === 'all') {
      answer.voice_generation = all
        .filter((v) => v.type === 'prompt')
        .map((v) => ({
          voice_id: v.id,
          voice_name: v.name,
          description: v.prompt ? [v.prompt] : [],
          created_time: day(v.created_at),
        }));
    }
    return answer;
  }

  /** `POST /v1/voice_clone`: refused before anything else without a consent of the key (nothing reaches the upstream). */
  async clone(key: AuthenticatedKey, dto: VoiceCloneRequestDto, requestId: string): Promise<VoiceCloneResponse> {
    if (!dto.consent_id) {
      throw new DomainError(
        'missing_field',
        "A voice is cloned only with a consent recording of this key behind it: record one (POST /v1/audio/voice_consents) and send its id as 'consent_id'.",
        { param: 'consent_id' },
      );
    }
    const sample = await this.files.uploaded(key.id, dto.file_id, 'voice_clone');
    const voice = await this.custom.create(
      key,
      { name: dto.voice_id, consent: dto.consent_id },
      { buffer: sample, size: sample.length },
      requestId,
    );
    return {
      input_sensitive: false,
      input_sensitive_type: 0,
      demo_audio: '',
      voice_id: voice.id,
      base_resp: MINIMAX_OK,
    };
  }

  /** `POST /v1/voice_design`: the gateway's design, then `preview_text` spoken with the new voice through the chain. */
  async design(call: ProxiedCall, dto: VoiceDesignRequestDto): Promise<VoiceDesignResponse> {
    const voice = await this.custom.design(
      call.key,
      { name: dto.voice_id ?? DESIGNED_NAME, prompt: dto.prompt, previewText: dto.preview_text },
      call.requestId,
    );
    const step = call.key.chain.find((s) => s.provider === voice.provider);
    if (!step)
      throw new DomainError(
        'internal_error',
        `The designed voice lives on ${voice.provider}, which left the key's chain.`,
      );
    const job = toSpeechJob(
      {
        model: step.model,
        text: dto.preview_text,
        voice_setting: { voice_id: voice.id },
        audio_setting: { format: 'mp3' },
      },
      SYNC_TEXT_LIMIT,
    );
    const trial = await this.speech.collect(call, job);
    return { voice_id: voice.id, trial_audio: trial.bytes.toString('hex'), base_resp: MINIMAX_OK };
  }
}
