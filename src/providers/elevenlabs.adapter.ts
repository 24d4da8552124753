import { adapterFactory, HttpProviderAdapter } from './http-adapter';
import type { ResolvedProvider } from '../config/gateway-config';
import { jobOwner, transcodeStream } from '../audio/pool/pool-jobs';
import { outputShape } from '../audio/transcoder';
import { AudioStream, CallContext, ProviderAdapter, SpeechCall, VoiceInfo, VoiceOrigin } from './provider-adapter';
import type { UpstreamClientOptions } from './http';
import type { UpstreamExecutor } from './upstream-executor';

/** The raw PCM rates ElevenLabs streams (`output_format=pcm_<rate>`, S16LE mono); 44100 needs a Pro plan. */
export const ELEVENLABS_PCM_RATES = [16000, 22050, 24000, 44100] as const;
/** ElevenLabs' documented `voice_settings.speed` range. */
const MIN_SPEED = 0.7;
const MAX_SPEED = 1.2;
/** Voice ids are opaque; this only keeps the path segment sane. */
const VOICE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Long-standing premade voices every account has (ElevenLabs' own examples use them); the account's own list is longer. */
const PREMADE_VOICES: VoiceInfo[] = [
  { id: '21m00Tcm4TlvDq8ikWAM', name: 'Rachel', languages: ['en'] },
  { id: 'EXAVITQu4vr4xnSDxMaL', name: 'Sarah', languages: ['en'] },
  { id: 'JBFqnCBsd6RMkjVDRZzb', name: 'George', languages: ['en'] },
  { id: 'pNInz6obpgDQGcFmaJgB', name: 'Adam', languages: ['en'] },
];
const PREMADE_VOICE_IDS = new Set(PREMADE_VOICES.map((voice) => voice.id));

/** The upstream rate to ask for: the nearest at or above the requested one (resampling down loses nothing), else the highest. */
export function elevenLabsPcmRate(requested: number): number {
  return (
    ELEVENLABS_PCM_RATES.find((rate) => rate >= requested) ?? ELEVENLABS_PCM_RATES[ELEVENLABS_PCM_RATES.length - 1]
  );
}

/** ElevenLabs TTS: streamed raw PCM, transcoded here into exactly the requested format, rate and channels. */
export class ElevenLabsAdapter extends HttpProviderAdapter implements ProviderAdapter {
  readonly kind = 'elevenlabs' as const;

  constructor(provider: ResolvedProvider, options: UpstreamClientOptions = {}, executor?: UpstreamExecutor) {
    super(provider, provider.apiKey ? { 'xi-api-key': provider.apiKey } : {}, options, executor);
  }

  /** `vol` becomes a gain in the transcoder; `pitch` has no ElevenLabs equivalent and is ignored; speed is clamped to 0.7..1.2. */
  async speech(call: SpeechCall, ctx: CallContext): Promise<AudioStream> {
    const rate = elevenLabsPcmRate(call.output.sampleRate);
    const speed = Math.min(MAX_SPEED, Math.max(MIN_SPEED, call.speed));
    // voice_settings left out at speed 1: an object sent would replace the voice's stored settings for this call
    const normalization = call.options?.voice_setting?.text_normalization;
    const body = JSON.stringify({
      text: call.text,
      model_id: ctx.model,
      ...(speed !== 1 ? { voice_settings: { speed } } : {}),
      // MiniMax's text_normalization, as ElevenLabs says it
      ...(normalization !== undefined ? { apply_text_normalization: normalization ? 'on' : 'off' } : {}),
    });
    const path = `/text-to-speech/${encodeURIComponent(call.voiceId)}/stream?output_format=pcm_${rate}`;
    const audio = await this.upstream.relay({ method: 'POST', path, headers: this.headers, body, signal: ctx.signal });
    const chunks = transcodeStream(audio, { sampleRate: rate, channels: 1 }, call.output, {
      gain: call.vol,
      maxSeconds: call.maxSeconds,
      owner: jobOwner(ctx),
    });
    return { ...outputShape(call.output), chunks };
  }

  voices(): Promise<VoiceInfo[]> {
    return Promise.resolve(PREMADE_VOICES.map((voice) => ({ ...voice, languages: [...voice.languages] })));
  }

  /** Any well-formed id: library, cloned and designed voices are per account and only the upstream knows them. */
  acceptsVoice(voiceId: string, origin: VoiceOrigin = 'client'): Promise<boolean> {
    if (PREMADE_VOICE_IDS.has(voiceId) || (this.provider.allowedVoiceIds ?? []).includes(voiceId))
      return Promise.resolve(true);
    return Promise.resolve(origin === 'operator' && VOICE_ID.test(voiceId));
  }

  /** Listing models synthesises nothing, so it costs no characters, and it checks the key. */
}

export const ElevenLabsAdapterFactory = adapterFactory(
  'elevenlabs',
  (provider, pool) => new ElevenLabsAdapter(provider, pool),
);
