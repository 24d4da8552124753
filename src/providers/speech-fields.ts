import type { ProviderKind } from '../config/provider-kinds';
import { isRealtimeModel } from './openai-realtime';

/** MiniMax's emotions (T2A v2 `voice_setting.emotion`; `fluent` and `whisper` on the newer models, `neutral` on the older). */
export const EMOTIONS = [
  'happy',
  'sad',
  'angry',
  'fearful',
  'disgusted',
  'surprised',
  'calm',
  'neutral',
  'fluent',
  'whisper',
] as const;
export type Emotion = (typeof EMOTIONS)[number];

/** MiniMax's `language_boost` values (T2A v2 reference), `auto` letting the model decide. */
export const LANGUAGE_BOOSTS = [
  'auto',
  'Chinese',
  'Chinese,Yue',
  'English',
  'Arabic',
  'Russian',
  'Spanish',
  'French',
  'Portuguese',
  'German',
  'Turkish',
  'Dutch',
  'Ukrainian',
  'Vietnamese',
  'Indonesian',
  'Japanese',
  'Italian',
  'Korean',
  'Thai',
  'Polish',
  'Romanian',
  'Greek',
  'Czech',
  'Finnish',
  'Hindi',
  'Bulgarian',
  'Danish',
  'Hebrew',
  'Malay',
  'Persian',
  'Slovak',
  'Swedish',
  'Croatian',
  'Filipino',
  'Hungarian',
  'Norwegian',
  'Slovenian',
  'Catalan',
  'Nynorsk',
  'Tamil',
  'Afrikaans',
] as const;

/** `voice_modify.sound_effects` (T2A v2 reference). */
export const SOUND_EFFECTS = ['spacious_echo', 'auditorium_echo', 'lofi_telephone', 'robotic'] as const;

/** `subtitle_type` (T2A v2 reference: sentence-level by default, word-level on request, word by word as the stream goes). */
export const SUBTITLE_TYPES = ['sentence', 'word', 'word_streaming'] as const;

/**
 * MiniMax's optional T2A fields that shape the speech (decisions §7), exactly as the client sent them:
 * a MiniMax step forwards them unchanged, other kinds use what they can express.
 */
export interface SpeechOptions {
  voice_setting?: {
    emotion?: Emotion;
    text_normalization?: boolean;
    english_normalization?: boolean;
    latex_read?: boolean;
  };
  /** `audio_setting` beside the output shape the gateway decides (format, rate, bitrate, channels). */
  audio_setting?: { force_cbr?: boolean };
  language_boost?: (typeof LANGUAGE_BOOSTS)[number];
  pronunciation_dict?: { tone?: string[] };
  timbre_weights?: Array<{ voice_id: string; weight: number }>;
  voice_modify?: {
    pitch?: number;
    intensity?: number;
    timbre?: number;
    sound_effects?: (typeof SOUND_EFFECTS)[number];
  };
  subtitle_enable?: boolean;
  subtitle_type?: (typeof SUBTITLE_TYPES)[number];
  continuous_sound?: boolean;
  aigc_watermark?: boolean;
}

/**
 * The voice id of a request that names its voices by `timbre_weights` alone (decisions §10): a MiniMax step sends
 * no `voice_setting.voice_id` (the mix is the voice); any other step speaks the heaviest voice of the mix.
 */
export const MIX_ONLY_VOICE = '';

/** A request field a provider kind may or may not be able to express, named by its path in the request. */
export const SPEECH_FIELDS = [
  'voice_setting.pitch',
  'voice_setting.emotion',
  'voice_setting.text_normalization',
  'voice_setting.english_normalization',
  'voice_setting.latex_read',
  'audio_setting.force_cbr',
  'language_boost',
  'pronunciation_dict',
  'timbre_weights',
  'voice_modify',
  'subtitle_enable',
  'subtitle_type',
  'continuous_sound',
  'aigc_watermark',
  'instructions',
] as const;
export type SpeechField = (typeof SPEECH_FIELDS)[number];

const MINIMAX_FIELDS = SPEECH_FIELDS.filter((field) => field !== 'instructions');

/**
 * What each provider kind honours of SPEECH_FIELDS (speed and vol are honoured by every kind; docs/providers.md
 * shows this table and a unit test keeps the two equal). Anything else a request carries is ignored by that kind
 * and named in `x-svc-ignored-fields`.
 */
export const HONOURED_FIELDS: Record<ProviderKind, readonly SpeechField[]> = {
  minimax: MINIMAX_FIELDS,
  // emotion becomes a sentence of `instructions` (gpt-4o-mini-tts follows it); pitch has no OpenAI equivalent
  openai: ['voice_setting.emotion', 'instructions'],
  // text_normalization becomes `apply_text_normalization` on/off
  elevenlabs: ['voice_setting.text_normalization'],
  // the offline engine shifts pitch itself
  espeak: ['voice_setting.pitch'],
  anthropic: [],
  echo: [],
};

/**
 * The `speed` each kind can say (OpenAI's shape allows 0.25..4, MiniMax's 0.5..2): a step is sent the request's speed
 * clamped to its kind's range, so 0.25 reaches MiniMax as 0.5 (docs/providers.md).
 */
export const SPEED_RANGES: Record<ProviderKind, readonly [min: number, max: number]> = {
  minimax: [0.5, 2],
  openai: [0.25, 4],
  elevenlabs: [0.7, 1.2],
  // the engine's 80..450 words a minute around its 175
  espeak: [0.5, 2.5],
  anthropic: [0.5, 2],
  echo: [0.25, 4],
};

/**
 * The `speed` a realtime model's session takes (the SDK's `RealtimeAudioConfigOutput.speed`: 0.25..1.5): an `openai`
 * step with a realtime model clamps to it after SPEED_RANGES (docs/providers.md).
 */
export const REALTIME_SPEED_RANGE = [0.25, 1.5] as const;

export function speedFor(kind: ProviderKind, speed: number): number {
  const [min, max] = SPEED_RANGES[kind];
  return Math.min(max, Math.max(min, speed));
}

/**
 * Which kinds' upstreams make a format the gateway never encodes (`aac`): only their steps can serve it, and of
 * `openai` only the `/audio/speech` models (the Realtime API makes PCM only).
 */
export const PASS_THROUGH_MAKERS: Record<'aac', readonly ProviderKind[]> = { aac: ['openai'] };

/** True when a step of `kind` with `model` makes `format` itself (PASS_THROUGH_MAKERS). */
export function makesPassThrough(format: 'aac', kind: ProviderKind, model: string): boolean {
  return PASS_THROUGH_MAKERS[format].includes(kind) && !(kind === 'openai' && isRealtimeModel(model));
}

/** What a speech request carried beyond the voice, speed, volume and audio shape every kind honours. */
export interface RequestedFields {
  pitch: number;
  options?: SpeechOptions;
  instructions?: string;
}

/** The fields of SPEECH_FIELDS a request carried (pitch only when it asks for a shift), in that order. */
export function presentFields(request: RequestedFields): SpeechField[] {
  const options = request.options ?? {};
  const voice = options.voice_setting ?? {};
  const present: Record<SpeechField, boolean> = {
    'voice_setting.pitch': request.pitch !== 0,
    'voice_setting.emotion': voice.emotion !== undefined,
    'voice_setting.text_normalization': voice.text_normalization !== undefined,
    'voice_setting.english_normalization': voice.english_normalization !== undefined,
    'voice_setting.latex_read': voice.latex_read !== undefined,
    'audio_setting.force_cbr': options.audio_setting?.force_cbr !== undefined,
    language_boost: options.language_boost !== undefined,
    pronunciation_dict: options.pronunciation_dict !== undefined,
    timbre_weights: options.timbre_weights !== undefined,
    voice_modify: options.voice_modify !== undefined,
    subtitle_enable: options.subtitle_enable !== undefined,
    subtitle_type: options.subtitle_type !== undefined,
    continuous_sound: options.continuous_sound !== undefined,
    aigc_watermark: options.aigc_watermark !== undefined,
    instructions: request.instructions !== undefined && request.instructions !== '',
  };
  return SPEECH_FIELDS.filter((field) => present[field]);
}

/** The fields of a request that a step of `kind` does not express. */
export function ignoredBy(kind: ProviderKind, request: RequestedFields): SpeechField[] {
  const honoured = new Set<string>(HONOURED_FIELDS[kind]);
  return presentFields(request).filter((field) => !honoured.has(field));
}

/** The `x-svc-ignored-fields` header: what the serving step and the route did not use, or null when nothing. */
export const IGNORED_FIELDS_HEADER = 'x-svc-ignored-fields';

export function ignoredFieldsHeader(fields: readonly string[]): string | null {
  const unique = [...new Set(fields)];
  return unique.length > 0 ? unique.join(', ') : null;
}

/** OpenAI's `instructions` for an emotion (its speech models take style as words). */
export function emotionInstruction(emotion: Emotion): string {
  return emotion === 'whisper' ? 'Speak in a whisper.' : `Speak in a ${emotion} tone.`;
}
