import { adapterFactory, HttpProviderAdapter } from './http-adapter';
import type { ResolvedProvider } from '../config/gateway-config';
import { isStreamingFormat } from '../audio/encoders';
import { outputShape } from '../audio/transcoder';
import {
  AudioStream,
  CallContext,
  ProviderAdapter,
  SpeechCall,
  UpstreamFailure,
  UpstreamVoice,
  VoiceCloneCall,
  VoiceDesignCall,
  VoiceInfo,
  VoiceOrigin,
  VoiceSampleRules,
} from './provider-adapter';
import type { SpeechOptions } from './speech-fields';
import { multipartBody } from './multipart';
import { isRecord, UpstreamClientOptions } from './http';
import type { UpstreamCall, UpstreamExecutor } from './upstream-executor';
import {
  mp3BitrateOf,
  noAudio,
  once,
  replyAudio,
  startingWith,
  StreamedAudio,
  throwOnBaseResp,
  throwOnVoiceReply,
  wholeClipCap,
} from './minimax-replies';

/**
 * MiniMax system voices (T2A v2 reference, platform.minimax.io / platform.minimaxi.com "T2A V2" voice_id list,
 * plus ids shown by `POST /v1/get_voice`); the live list is longer and served by get_voice.
 */
const SYSTEM_VOICES: ReadonlyArray<readonly [id: string, name: string, language: string]> = [
  ['male-qn-qingse', 'Qingse (young man)', 'zh'],
  ['male-qn-jingying', 'Jingying (elite young man)', 'zh'],
  ['male-qn-badao', 'Badao (domineering young man)', 'zh'],
  ['male-qn-daxuesheng', 'Daxuesheng (college student)', 'zh'],
  ['female-shaonv', 'Shaonv (girl)', 'zh'],
  ['female-yujie', 'Yujie (mature woman)', 'zh'],
  ['female-chengshu', 'Chengshu (mature woman)', 'zh'],
  ['female-tianmei', 'Tianmei (sweet woman)', 'zh'],
  ['presenter_male', 'Male presenter', 'zh'],
  ['presenter_female', 'Female presenter', 'zh'],
  ['audiobook_male_1', 'Male audiobook 1', 'zh'],
  ['audiobook_male_2', 'Male audiobook 2', 'zh'],
  ['audiobook_female_1', 'Female audiobook 1', 'zh'],
  ['audiobook_female_2', 'Female audiobook 2', 'zh'],
  ['clever_boy', 'Clever boy', 'zh'],
  ['cute_boy', 'Cute boy', 'zh'],
  ['lovely_girl', 'Lovely girl', 'zh'],
  ['Chinese (Mandarin)_Reliable_Executive', 'Steady Executive', 'zh'],
  ['Chinese (Mandarin)_News_Anchor', 'News Anchor (Female)', 'zh'],
  ['Santa_Claus', 'Santa Claus', 'en'],
  ['Grinch', 'Grinch', 'en'],
  ['Rudolph', 'Rudolph', 'en'],
  ['Arnold', 'Arnold', 'en'],
  ['Charming_Santa', 'Charming Santa', 'en'],
  ['Charming_Lady', 'Charming Lady', 'en'],
  ['Sweet_Girl', 'Sweet Girl', 'en'],
  ['Cute_Elf', 'Cute Elf', 'en'],
  ['Attractive_Girl', 'Attractive Girl', 'en'],
  ['Serene_Woman', 'Serene Woman', 'en'],
  ['English_Graceful_Lady', 'Graceful Lady', 'en'],
  ['English_Insightful_Speaker', 'Insightful Speaker', 'en'],
  ['English_radiant_girl', 'Radiant Girl', 'en'],
  ['English_Persuasive_Man', 'Persuasive Man', 'en'],
  ['English_expressive_narrator', 'Expressive Narrator', 'en'],
];
const SYSTEM_VOICE_IDS = new Set(SYSTEM_VOICES.map(([id]) => id));
/** MiniMax's rule for cloned/designed voice ids: 8..256 chars, a letter first, letters/digits/-/_, not ending in - or _. */
export const CUSTOM_VOICE_ID = /^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$/;

/** MiniMax's quick-clone sample rules: mp3, m4a or wav, 10 s to 5 min, at most 20 MB. */
export const MINIMAX_SAMPLE_RULES: VoiceSampleRules = {
  types: ['audio/mpeg', 'audio/mp4', 'audio/wav'],
  maxBytes: 20 * 1024 * 1024,
  minSeconds: 10,
  maxSeconds: 300,
};

/** MiniMax T2A v2: the formats it makes natively (mp3, pcm, flac streamed; wav only whole) pass through as sent. */
export class MiniMaxAdapter extends HttpProviderAdapter implements ProviderAdapter {
  readonly kind = 'minimax' as const;
  /** The older accounts' GroupId rides on every call as a query parameter. */
  private readonly query: string;

  constructor(provider: ResolvedProvider, options: UpstreamClientOptions = {}, executor?: UpstreamExecutor) {
    super(provider, provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}, options, executor);
    this.query = provider.groupId ? `?GroupId=${encodeURIComponent(provider.groupId)}` : '';
  }

  async speech(call: SpeechCall, ctx: CallContext): Promise<AudioStream> {
    const { output } = call;
    // MiniMax makes every format the gateway offers but aac (never routed here); the WAVs only whole
    const stream = isStreamingFormat(output.format);
    const { voice_setting: voiceOptions, audio_setting: audioOptions, ...options }: SpeechOptions = call.options ?? {};
    const body = JSON.stringify({
      model: ctx.model,
      text: call.text,
      stream,
      // the final event would otherwise repeat the whole clip: double the bytes for nothing
      ...(stream ? { stream_options: { exclude_aggregated_audio: true } } : {}),
      // MiniMax's own optional fields go as the client sent them (decisions §7); the audio always comes back as hex
      // a mix named by timbre_weights alone has no voice_id (MIX_ONLY_VOICE): none is invented
      voice_setting: {
        voice_id: call.voiceId || undefined,
        speed: call.speed,
        vol: call.vol,
        pitch: call.pitch,
        ...voiceOptions,
      },
      audio_setting: {
        sample_rate: output.sampleRate,
        bitrate: output.bitrate,
        format: output.format,
        channel: output.channels,
        ...audioOptions,
      },
      ...options,
    });
    const { contentType } = outputShape(output);
    const upstreamCall: UpstreamCall = {
      method: 'POST',
      path: `/t2a_v2${this.query}`,
      headers: this.headers,
      body,
      signal: ctx.signal,
    };
    const cap = wholeClipCap(output);
    if (!stream) return { contentType, chunks: once(replyAudio(await this.upstream.json(upstreamCall, cap))) };
    // errors come back as a JSON object even when a stream was asked for: read whole, as one event
    const audio = new StreamedAudio();
    const chunks = audio.chunks(
      await this.upstream.events(upstreamCall, audio.translate, { maxLineChars: cap, wholeJsonCap: cap }),
    );
    // the first audio decides the attempt: a base_resp error before it fails the call, not the stream
    const first = await chunks.next();
    if (first.done) throw noAudio();
    const bitrate = output.format === 'mp3' ? mp3BitrateOf(first.value) : undefined;
    return {
      contentType,
      ...(bitrate && bitrate !== output.bitrate ? { bitrate } : {}),
      chunks: startingWith(first.value, chunks),
    };
  }

  readonly voiceSampleRules = MINIMAX_SAMPLE_RULES;

  /** Quick clone: upload the sample (purpose `voice_clone`), then clone it under the id we chose. */
  async cloneVoice(call: VoiceCloneCall, signal: AbortSignal): Promise<UpstreamVoice> {
    if (!CUSTOM_VOICE_ID.test(call.voiceId)) throw new Error(`'${call.voiceId}' breaks MiniMax's voice id rule`);
    const upload = multipartBody([
      { name: 'purpose', value: 'voice_clone' },
      { name: 'file', file: call.sample },
    ]);
    const uploaded = await this.upstream.json({
      method: 'POST',
      path: `/files/upload${this.query}`,
      headers: { ...this.authHeaders, 'content-type': upload.contentType },
      body: upload.body,
      signal,
    });
    throwOnVoiceReply(uploaded);
    const fileId = isRecord(uploaded.file) ? uploaded.file.file_id : undefined;
    if (typeof fileId !== 'number' && typeof fileId !== 'string') {
      throw new UpstreamFailure({
        kind: 'provider_error',
        code: 'invalid_response',
        message: 'MiniMax did not return a file_id',
      });
    }
    const body = JSON.stringify({ file_id: fileId, voice_id: call.voiceId });
    throwOnVoiceReply(
      await this.upstream.json({
        method: 'POST',
        path: `/voice_clone${this.query}`,
        headers: this.headers,
        body,
        signal,
      }),
    );
    return { voiceId: call.voiceId, method: 'clone' };
  }

  /** Voice design from a description; MiniMax also reads `preview_text` aloud once (a trial clip, not kept). */
  async designVoice(call: VoiceDesignCall, signal: AbortSignal): Promise<UpstreamVoice> {
    const body = JSON.stringify({ prompt: call.prompt, preview_text: call.previewText, voice_id: call.voiceId });
    const reply = await this.upstream.json({
      method: 'POST',
      path: `/voice_design${this.query}`,
      headers: this.headers,
      body,
      signal,
    });
    throwOnVoiceReply(reply);
    return {
      voiceId: typeof reply.voice_id === 'string' && reply.voice_id ? reply.voice_id : call.voiceId,
      method: 'design',
    };
  }

  async deleteVoice(voice: UpstreamVoice, signal: AbortSignal): Promise<void> {
    const body = JSON.stringify({
      voice_type: voice.method === 'clone' ? 'voice_cloning' : 'voice_generation',
      voice_id: voice.voiceId,
    });
    throwOnVoiceReply(
      await this.upstream.json({
        method: 'POST',
        path: `/delete_voice${this.query}`,
        headers: this.headers,
        body,
        signal,
      }),
    );
  }

  voices(): Promise<VoiceInfo[]> {
    return Promise.resolve(SYSTEM_VOICES.map(([id, name, language]) => ({ id, name, languages: [language] })));
  }

  /** System ids, and any well-formed custom id: cloned and designed voices live upstream, per account. */
  acceptsVoice(voiceId: string, origin: VoiceOrigin = 'client'): Promise<boolean> {
    if (SYSTEM_VOICE_IDS.has(voiceId) || (this.provider.allowedVoiceIds ?? []).includes(voiceId))
      return Promise.resolve(true);
    return Promise.resolve(origin === 'operator' && CUSTOM_VOICE_ID.test(voiceId));
  }

  /** Listing the system voices is free (nothing is synthesised) and checks the key: a bad one is base_resp 1004. */
  override async probe(signal: AbortSignal): Promise<void> {
    const body = JSON.stringify({ voice_type: 'system' });
    throwOnBaseResp(
      await this.upstream.json({
        method: 'POST',
        path: `/get_voice${this.query}`,
        headers: this.headers,
        body,
        signal,
      }),
    );
  }
}

export const MiniMaxAdapterFactory = adapterFactory('minimax', (provider, pool) => new MiniMaxAdapter(provider, pool));
