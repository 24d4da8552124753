import type { AudioFormat } from '../audio/encoders';
import type { CallSignal, HeadersListener } from '../common/call-signal';
import type { ResolvedProvider } from '../config/gateway-config';
import type { ProviderKind } from '../config/provider-kinds';
import type { UpstreamClientOptions } from './http';
import type { SpeechOptions } from './speech-fields';

/** How an upstream attempt failed; adapters throw it, the failover core classifies `outcome`. */
export class UpstreamFailure extends Error {
  constructor(readonly outcome: Exclude<UpstreamOutcome, { kind: 'ok' }>) {
    // a verdict, not a bug: its stack is never logged, and not capturing it makes each failover cheaper
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(
      outcome.kind === 'http' ? `HTTP ${outcome.status}${outcome.message ? `: ${outcome.message}` : ''}` : outcome.kind,
    );
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'UpstreamFailure';
  }
}

/** How one upstream attempt ended, as an adapter reports it. */
export type UpstreamOutcome =
  | { kind: 'ok' }
  /** `error`: the fields of the upstream's error body, when it had them (relayed to the client, decisions §3). */
  /** `retryAfterMs`: the upstream's `Retry-After` (seconds or an HTTP date), in ms from when it answered. */
  | { kind: 'http'; status: number; message?: string; error?: UpstreamErrorFields; retryAfterMs?: number }
  /**
   * `afterMs`: the part of the deadline the provider had (the core's deadline less the call's wait for a free
   * upstream socket; a transport's own timeout carries none). `local`: it ran out while the call still waited for
   * a socket in the gateway (decisions §11): the provider never had the call.
   */
  | { kind: 'timeout'; afterMs?: number; local?: true; phase?: 'first_token' }
  | { kind: 'connection'; code?: string; message?: string }
  /** `requestFault`: the provider's code blames the request (e.g. MiniMax's sensitive-content refusal), not its own health. */
  | { kind: 'provider_error'; code: string | number; message?: string; requestFault?: boolean };

/** An upstream error body's own `type`, `code` and `param` (OpenAI's shape; Anthropic's has a `type` only). */
export interface UpstreamErrorFields {
  type?: string;
  code?: string;
  param?: string;
}

/** What one attempt on one chain step gets from the core. */
/** Who named a voice id: the client in its request, or the operator (a chain step's voice_map). */
export type VoiceOrigin = 'client' | 'operator';

export interface CallContext {
  /** The model this step sends (each fallback step has its own). */
  model: string;
  /**
   * Aborted on the step's timeout (reason named `TimeoutError`: report `{kind:'timeout'}`) or when
   * the client goes away (the core checks that itself and does not count it against the provider).
   * For streams `timeout_ms` covers the time to the headers, then `first_token_timeout_ms` to the first data event.
   */
  signal: CallSignal;
  requestId: string;
  /** The key the call is made for (local shared pools, like the audio workers', take keys in turn). */
  keyId?: string;
  /** The step's deadline (see StepPhases). */
  deadline?: StepPhases;
}

/**
 * The step's deadline as a call sees it (decisions §3): `hold` while the call waits for a local resource (a worker of
 * the audio pool), which is no provider's time; `restart` when it got one: the phase's whole timeout starts again;
 * `headersReceived` when a stream's headers came: `first_token_timeout_ms` runs from there to the first data event.
 */
export interface StepPhases extends HeadersListener {
  hold(): void;
  restart(): void;
}

export interface ChatMessage {
  role: string;
  content: unknown;
  [field: string]: unknown;
}

/** An OpenAI chat completions request; every field is passed through, `model` is replaced per step. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  [field: string]: unknown;
}

export interface TokenUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** An OpenAI `chat.completion` object (without the gateway's `provider` field). */
export type ChatCompletion = Record<string, unknown> & { usage?: TokenUsage };

/** An OpenAI `chat.completion.chunk` object. */
export type ChatChunk = Record<string, unknown> & { usage?: TokenUsage | null };

/** Every format a speech request may ask for (`aac` only where a step's upstream makes it). */
export type SpeechFormat = AudioFormat;

/** The audio a speech call must produce: exactly this format, rate and channel count. */
export interface SpeechOutput {
  format: SpeechFormat;
  sampleRate: number;
  /** Requested bitrate (mp3); an adapter may report the one it really used. */
  bitrate: number;
  channels: number;
}

/** One synthesis on one provider: the voice is already this provider's own (voice_map applied). */
export interface SpeechCall {
  text: string;
  voiceId: string;
  /** 0.5..2 */
  speed: number;
  /** (0..10] */
  vol: number;
  /** -12..12 semitones */
  pitch: number;
  output: SpeechOutput;
  /** `voiceId` is a custom voice this provider made (cloned or designed), not one of its built-in voices. */
  customVoice?: boolean;
  /** Style instructions (OpenAI's `instructions`); providers without an equivalent ignore them. */
  instructions?: string;
  /** MiniMax's optional fields as the client sent them: a MiniMax step forwards them, others use what they can (HONOURED_FIELDS). */
  options?: SpeechOptions;
  /** Seconds of output past which the call fails with `audio_too_long` (counted where the gateway makes or transcodes the audio). */
  maxSeconds?: number;
}

/** Audio as it arrives: the promise resolves once the upstream accepted the call. */
export interface AudioStream {
  contentType: string;
  /** The mp3 bitrate really used, when it differs from the requested one. */
  bitrate?: number;
  /** Encoded bytes in `output`'s format; throws UpstreamFailure on a fault mid-stream. */
  chunks: AsyncIterable<Buffer>;
}

export interface VoiceInfo {
  /** The provider's own voice id. */
  id: string;
  name: string;
  languages: string[];
}

/** An audio file sent upstream (a voice sample, a consent recording). */
export interface AudioUpload {
  data: Buffer;
  /** Content type decided from the bytes. */
  contentType: string;
  filename: string;
}

/** Cloning a voice from a sample, with the consent recording behind it (some providers want it too). */
export interface VoiceCloneCall {
  /** The upstream id to give the voice, where the provider lets the caller choose it (MiniMax). */
  voiceId: string;
  name: string;
  sample: AudioUpload;
  consent: { recording: AudioUpload; language: string; name: string };
}

/** Designing a voice from a text description. */
export interface VoiceDesignCall {
  /** The upstream id to give the voice, where the provider lets the caller choose it. */
  voiceId: string;
  prompt: string;
  previewText: string;
}

/** A custom voice as the provider knows it: its own id, and the consent it keeps for it, if any. */
export interface UpstreamVoice {
  voiceId: string;
  consentId?: string;
  method: 'clone' | 'design';
}

/** What a provider accepts as a voice sample; checked before anything is uploaded. */
export interface VoiceSampleRules {
  /** Content types as sniffed from the bytes. */
  types: readonly string[];
  maxBytes: number;
  minSeconds?: number;
  maxSeconds?: number;
}

/**
 * One configured provider. Adapters translate wire formats only: they report failures as
 * UpstreamFailure and never decide failover.
 */
export interface ProviderAdapter {
  readonly provider: ResolvedProvider;
  readonly kind: ProviderKind;
  /** Non-streaming chat completion. */
  chat?(request: ChatRequest, ctx: CallContext): Promise<ChatCompletion>;
  /**
   * Streaming chat completion. Resolves once the upstream has accepted the request (status and
   * headers); the chunks then arrive through the iterable, which throws UpstreamFailure on a fault
   * mid-stream and ends after the upstream's last chunk. Breaking out of the loop (or the signal)
   * cancels the upstream request.
   */
  chatStream?(request: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>>;
  /**
   * Text to speech in exactly `call.output`'s format, rate and channels (adapters whose upstream
   * cannot produce them natively transcode). Bytes flow as the upstream sends them.
   */
  speech?(call: SpeechCall, ctx: CallContext): Promise<AudioStream>;
  /** The voice a fallback step speaks with when the requested one is not its own and no voice_map names one. */
  readonly defaultVoice?: string;
  /** The provider's built-in voices (known system voices for upstreams that have no list call). */
  voices?(): Promise<VoiceInfo[]>;
  /**
   * True when a request may have the provider speak with `voiceId` (its own id). A raw custom id of the
   * upstream account is accepted only when the operator allowed it: in the provider's `allowed_voice_ids`,
   * or as a chain step's voice_map target (`origin: 'operator'`).
   */
  acceptsVoice?(voiceId: string, origin?: VoiceOrigin): Promise<boolean>;
  /** Sample limits of `cloneVoice` (format, size, duration). */
  readonly voiceSampleRules?: VoiceSampleRules;
  /** Clones a voice from a sample; resolves with the provider's ids once the voice can speak. */
  cloneVoice?(call: VoiceCloneCall, signal: AbortSignal): Promise<UpstreamVoice>;
  /** Designs a voice from a text description. */
  designVoice?(call: VoiceDesignCall, signal: AbortSignal): Promise<UpstreamVoice>;
  /** Removes a custom voice (and the consent copy the provider kept for it). */
  deleteVoice?(voice: UpstreamVoice, signal: AbortSignal): Promise<void>;
  /** A cheap, never billed liveness call (e.g. GET /models); throws UpstreamFailure when sick. */
  probe(signal: AbortSignal): Promise<void>;
  /** Releases connections (undici pools) at shutdown. */
  close?(): Promise<void>;
}

/** Makes the adapter of one provider kind. Injectable classes, listed under ADAPTER_FACTORIES. */
export interface AdapterFactory {
  readonly kind: ProviderKind;
  /** `pool`: the upstream socket pool's settings, for adapters that call over HTTP. */
  create(provider: ResolvedProvider, pool?: UpstreamClientOptions): ProviderAdapter;
}

export const ADAPTER_FACTORIES = Symbol('ADAPTER_FACTORIES');
