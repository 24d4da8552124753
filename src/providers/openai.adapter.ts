import { adapterFactory, HttpProviderAdapter } from './http-adapter';
import type { ResolvedProvider } from '../config/gateway-config';
import { jobOwner, transcodeStream } from '../audio/pool/pool-jobs';
import { outputShape } from '../audio/transcoder';
import {
  AudioStream,
  CallContext,
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  ProviderAdapter,
  SpeechCall,
  UpstreamFailure,
  UpstreamVoice,
  VoiceCloneCall,
  VoiceInfo,
  VoiceSampleRules,
} from './provider-adapter';
import { emotionInstruction } from './speech-fields';
import { isRealtimeModel } from './openai-realtime';
import { REALTIME_PCM, realtimeSpeech } from './openai-realtime-speech';
import { ChatStreamTolerance } from './stream-tolerance';
import { multipartBody } from './multipart';
import { withRawJson } from '../common/http/sse-frame';
import { isRecord, parseJsonBody, requireBaseUrl, SseEvent, StreamStep, UpstreamClientOptions } from './http';
import type { UpstreamExecutor } from './upstream-executor';

/** OpenAI's 13 built-in voices (the official SDK's `SpeechCreateParams.voice`; "optimized for English"). */
export const OPENAI_VOICES = [
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'fable',
  'onyx',
  'nova',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
] as const;
const OPENAI_VOICE_IDS: ReadonlySet<string> = new Set(OPENAI_VOICES);
/** OpenAI's custom voice rules (custom voices guide): a sample of at most 30 s and 10 MiB in one of these formats. */
export const OPENAI_SAMPLE_RULES: VoiceSampleRules = {
  types: ['audio/mpeg', 'audio/wav', 'audio/ogg', 'audio/aac', 'audio/flac', 'audio/webm', 'audio/mp4'],
  maxBytes: 10 * 1024 * 1024,
  maxSeconds: 30,
};

const createdId = (reply: Record<string, unknown>, what: string): string => {
  if (typeof reply.id === 'string' && reply.id) return reply.id;
  throw new UpstreamFailure({
    kind: 'provider_error',
    code: 'invalid_response',
    message: `OpenAI did not return the ${what}'s id`,
  });
};

/** A chunk stream's `data: {"error": {...}}` (vLLM, LiteLLM, OpenRouter do this mid-stream). */
function streamError(chunk: Record<string, unknown>): UpstreamFailure | undefined {
  const { error } = chunk;
  if (!isRecord(error)) return undefined;
  const code =
    typeof error.code === 'string' || typeof error.code === 'number'
      ? error.code
      : typeof error.type === 'string'
        ? error.type
        : 'stream_error';
  const message = typeof error.message === 'string' ? error.message : undefined;
  return new UpstreamFailure({ kind: 'provider_error', code, ...(message ? { message } : {}) });
}

function translateOpenAiEvent(event: SseEvent): StreamStep<ChatChunk> {
  if (event.data === '[DONE]') return 'end';
  const chunk = parseJsonBody(event.data);
  const failure = streamError(chunk);
  if (failure) throw failure;
  // the text it came from, so the chunk can be framed for the client without serialising it again
  return withRawJson(chunk, event.data);
}

/** Any OpenAI-compatible chat and TTS endpoint: chat requests go through as is, with the step's model. */
export class OpenAiAdapter extends HttpProviderAdapter implements ProviderAdapter {
  readonly kind = 'openai' as const;
  /** api.openai.com itself, whose voice list is known. */
  private readonly official: boolean;

  constructor(provider: ResolvedProvider, options: UpstreamClientOptions = {}, executor?: UpstreamExecutor) {
    super(provider, provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}, options, executor);
    this.official = new URL(requireBaseUrl(provider)).hostname === 'api.openai.com';
  }

  async chat(request: ChatRequest, ctx: CallContext): Promise<ChatCompletion> {
    // stream_options is refused by OpenAI on a non-streaming call: undefined fields are left out of the JSON
    // (one copy, where a rest pattern and a spread made two)
    const body = JSON.stringify({ ...request, model: ctx.model, stream: undefined, stream_options: undefined });
    const text = await this.upstream.text({
      method: 'POST',
      path: '/chat/completions',
      headers: this.headers,
      body,
      signal: ctx.signal,
    });
    // the text it came from, so the answer can be written without serialising the completion again
    return withRawJson(parseJsonBody(text), text);
  }

  async chatStream(request: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const body = JSON.stringify({ ...request, model: ctx.model, stream: true });
    const tolerance = new ChatStreamTolerance(translateOpenAiEvent, this.provider.name, ctx.requestId);
    return this.upstream.events(
      { method: 'POST', path: '/chat/completions', headers: this.headers, body, signal: ctx.signal },
      tolerance.translate,
      { complete: tolerance.complete },
    );
  }

  /**
   * Asks for `pcm`, the one format whose rate and channels OpenAI pins down, and makes the requested format here,
   * so rate and channels are exactly as asked. `vol` becomes a gain here; `pitch` has no OpenAI equivalent and is ignored;
   * MiniMax's `emotion` becomes a sentence of `instructions`. `aac`, which the gateway does not encode, is asked of
   * OpenAI as it is and passed through (OpenAI's own 24 kHz mono, as the OpenAI shape asks).
   */
  async speech(call: SpeechCall, ctx: CallContext): Promise<AudioStream> {
    // /audio/speech models shut down on 2027-01-06; their successors speak only over the Realtime API (decisions §10)
    if (isRealtimeModel(ctx.model)) return realtimeSpeech(this.upstream, this.authHeaders, call, ctx);
    const emotion = call.options?.voice_setting?.emotion;
    const passThrough = call.output.format === 'aac';
    // MiniMax's emotion in words: OpenAI's speech models take style as instructions
    const instructions = [call.instructions, emotion ? emotionInstruction(emotion) : undefined]
      .filter(Boolean)
      .join(' ');
    // speed is only sent when it changes something: some compatible servers and models reject the field
    const body = JSON.stringify({
      model: ctx.model,
      input: call.text,
      // a custom voice goes as an object, as OpenAI's speech endpoint takes it
      voice: call.customVoice ? { id: call.voiceId } : call.voiceId,
      response_format: passThrough ? call.output.format : 'pcm',
      ...(call.speed !== 1 ? { speed: call.speed } : {}),
      ...(instructions ? { instructions } : {}),
    });
    const audio = await this.upstream.relay({
      method: 'POST',
      path: '/audio/speech',
      headers: this.headers,
      body,
      signal: ctx.signal,
    });
    if (passThrough) return { contentType: 'audio/aac', chunks: audio };
    return {
      ...outputShape(call.output),
      chunks: transcodeStream(audio, REALTIME_PCM, call.output, {
        gain: call.vol,
        maxSeconds: call.maxSeconds,
        owner: jobOwner(ctx),
      }),
    };
  }

  readonly voiceSampleRules = OPENAI_SAMPLE_RULES;

  /** OpenAI's custom voices (eligible organisations): the consent recording goes up first, then the sample that names it. */
  async cloneVoice(call: VoiceCloneCall, signal: AbortSignal): Promise<UpstreamVoice> {
    const consentForm = multipartBody([
      { name: 'name', value: call.consent.name },
      { name: 'language', value: call.consent.language },
      { name: 'recording', file: call.consent.recording },
    ]);
    const consent = await this.upstream.json({
      method: 'POST',
      path: '/audio/voice_consents',
      headers: { ...this.authHeaders, 'content-type': consentForm.contentType },
      body: consentForm.body,
      signal,
    });
    const consentId = createdId(consent, 'consent');
    const voiceForm = multipartBody([
      { name: 'name', value: call.name },
      { name: 'consent', value: consentId },
      { name: 'audio_sample', file: call.sample },
    ]);
    try {
      const voice = await this.upstream.json({
        method: 'POST',
        path: '/audio/voices',
        headers: { ...this.authHeaders, 'content-type': voiceForm.contentType },
        body: voiceForm.body,
        signal,
      });
      return { voiceId: createdId(voice, 'voice'), consentId, method: 'clone' };
    } catch (err) {
      // the consent copy is of no use without its voice
      await this.upstream
        .check({
          method: 'DELETE',
          path: `/audio/voice_consents/${encodeURIComponent(consentId)}`,
          headers: this.authHeaders,
          signal: AbortSignal.timeout(5000),
        })
        .catch(() => undefined);
      throw err;
    }
  }

  async deleteVoice(voice: UpstreamVoice, signal: AbortSignal): Promise<void> {
    await this.upstream.check({
      method: 'DELETE',
      path: `/audio/voices/${encodeURIComponent(voice.voiceId)}`,
      headers: this.authHeaders,
      signal,
    });
    if (voice.consentId) {
      await this.upstream.check({
        method: 'DELETE',
        path: `/audio/voice_consents/${encodeURIComponent(voice.consentId)}`,
        headers: this.authHeaders,
        signal,
      });
    }
  }

  voices(): Promise<VoiceInfo[]> {
    return Promise.resolve(
      OPENAI_VOICES.map((id) => ({ id, name: id[0].toUpperCase() + id.slice(1), languages: ['en'] })),
    );
  }

  /** OpenAI itself has a fixed set; other OpenAI-compatible servers bring their own voices, so any id is theirs to judge. */
  acceptsVoice(voiceId: string): Promise<boolean> {
    return Promise.resolve(OPENAI_VOICE_IDS.has(voiceId) || (!this.official && voiceId.length > 0));
  }
}

export const OpenAiAdapterFactory = adapterFactory('openai', (provider, pool) => new OpenAiAdapter(provider, pool));
