import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsNumber, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { DomainError } from '../../common/errors/domain-error';
import { assertTextLimit, SYNC_TEXT_LIMIT } from '../speech-job';
import { SpeechRequestDto } from './speech-request.dto';

/** OpenAI's `response_format` values (the official SDK's `SpeechCreateParams`). */
export const OPENAI_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

/** OpenAI's speech output: 24 kHz mono (its `pcm` is exactly that), so clients get what they expect from OpenAI. */
const OPENAI_SAMPLE_RATE = 24000;

/**
 * OpenAI's request shape for `POST /v1/audio/speech` (what the official SDK's `audio.speech.create` sends),
 * accepted beside MiniMax's and mapped onto the same request: `input` → `text`, `voice` → `voice_setting.voice_id`,
 * `speed` → `voice_setting.speed`, `response_format` → `audio_setting.format` at 24 kHz mono.
 */
export class OpenAiSpeechRequestDto {
  /** Selects the entry step of the key's chain, as `model` does in the MiniMax shape. */
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  model!: string;

  /** Text to speak, 1 to 10,000 characters. */
  @IsString()
  @MinLength(1)
  input!: string;

  /** A voice id of the key's chain (built-in, or a custom `voice_…`); OpenAI's `{ "id": "voice_…" }` form is accepted too. */
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }],
  })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  voice!: string;

  /**
   * `mp3` (default), `opus` (Ogg Opus, made by the gateway from any step), `aac` (only from a step whose upstream makes
   * it: an `openai` step with an `/audio/speech` model; else 400 `format_not_supported`), `flac`, `wav` or `pcm`
   * (16-bit little-endian, 24 kHz mono).
   */
  @ApiPropertyOptional({ enum: OPENAI_FORMATS, default: 'mp3' })
  @IsOptional()
  @IsIn(OPENAI_FORMATS)
  response_format?: (typeof OPENAI_FORMATS)[number];

  /** 0.25 to 4, as OpenAI allows; a step whose provider has a narrower range gets it clamped (MiniMax 0.5..2, see docs/providers.md). */
  @ApiPropertyOptional({ default: 1, minimum: 0.25, maximum: 4 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.25)
  @Max(4)
  speed?: number;

  /** Style instructions, passed to OpenAI-kind providers; others ignore them. */
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  instructions?: string;

  /** `audio` (the raw audio body, streamed as it is made) or `sse`: OpenAI's `speech.audio.delta` events (base64 audio), then `speech.audio.done`. */
  @ApiPropertyOptional({ enum: ['audio', 'sse'], default: 'audio' })
  @IsOptional()
  @IsIn(['audio', 'sse'])
  stream_format?: 'audio' | 'sse';
}

/** A synchronous speech body of either shape, as the MiniMax request plus what only OpenAI's shape carries. */
export interface SpeechBody {
  request: SpeechRequestDto;
  instructions?: string;
  /** Which shape the client sent: errors of an OpenAI-shaped request name OpenAI's fields (decisions §10). */
  shape?: 'openai' | 'minimax';
  /** OpenAI's `stream_format`. */
  streamFormat?: 'audio' | 'sse';
}

/** The MiniMax field each OpenAI field maps onto, for errors found after the mapping (e.g. voice_not_found). */
export const OPENAI_FIELD_NAMES: Readonly<Record<string, string>> = {
  text: 'input',
  'voice_setting.voice_id': 'voice',
  voice_setting: 'voice',
  'voice_setting.speed': 'speed',
  'audio_setting.format': 'response_format',
};

/** The same error, naming OpenAI's fields instead of the MiniMax ones its request was mapped onto. */
export function withOpenAiFieldNames(err: unknown): unknown {
  if (!(err instanceof DomainError) || err.param === null) return err;
  const param = OPENAI_FIELD_NAMES[err.param];
  if (!param) return err;
  // longest first (`voice_setting.voice_id` before `voice_setting`); a plain word like "text" only where it is quoted as a field
  const names = Object.keys(OPENAI_FIELD_NAMES).sort((a, b) => b.length - a.length);
  const message = names.reduce((text, name) => {
    const quoted = text.split(`'${name}'`).join(`'${OPENAI_FIELD_NAMES[name]}'`);
    return name.includes('.') ? quoted.split(name).join(OPENAI_FIELD_NAMES[name]) : quoted;
  }, err.message);
  return new DomainError(err.code, message, { param, status: err.status, headers: err.headers });
}

/** OpenAI's body has `input`/`voice`; MiniMax's has `text`/`voice_setting`. Anything else is judged as MiniMax's (the default). */
export function isOpenAiShape(body: unknown): body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  return !('text' in body) && !('voice_setting' in body) && ('input' in body || 'voice' in body);
}

/** OpenAI's `voice: {"id": …}` as the plain id the DTO validates; any other object is refused by name. */
export function flattenVoice(body: Record<string, unknown>): Record<string, unknown> {
  const { voice } = body;
  if (typeof voice !== 'object' || voice === null) return body;
  const keys = Object.keys(voice);
  const id = (voice as { id?: unknown }).id;
  if (Array.isArray(voice) || keys.length !== 1 || typeof id !== 'string') {
    throw new DomainError('invalid_value', "'voice' must be a voice id, or an object with only an 'id'.", {
      param: 'voice',
    });
  }
  return { ...body, voice: id };
}

export function fromOpenAi(dto: OpenAiSpeechRequestDto): SpeechBody {
  assertTextLimit(dto.input, SYNC_TEXT_LIMIT, 'input');
  const request: SpeechRequestDto = {
    model: dto.model,
    text: dto.input,
    voice_setting: { voice_id: dto.voice, ...(dto.speed !== undefined ? { speed: dto.speed } : {}) },
    audio_setting: { format: dto.response_format ?? 'mp3', sample_rate: OPENAI_SAMPLE_RATE, channel: 1 },
  };
  return {
    request,
    shape: 'openai',
    streamFormat: dto.stream_format ?? 'audio',
    ...(dto.instructions ? { instructions: dto.instructions } : {}),
  };
}
