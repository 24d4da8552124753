import { Injectable } from '@nestjs/common';
import { AudioJobError } from '../audio/pool/audio-pool';
import { generate, jobOwner, runJob } from '../audio/pool/pool-jobs';
import { ESPEAK_DEFAULT_VOICE } from '../audio/engines/espeak/espeak-voice';
import { outputShape } from '../audio/transcoder';
import type { ResolvedProvider } from '../config/gateway-config';
import type {
  AdapterFactory,
  AudioStream,
  CallContext,
  ProviderAdapter,
  SpeechCall,
  VoiceInfo,
} from './provider-adapter';
import { UpstreamFailure } from './provider-adapter';

/** The voice list, read once from a worker (every espeak provider has the same engine); a failed read is retried. */
let voiceList: Promise<VoiceInfo[]> | null = null;

function listVoices(): Promise<VoiceInfo[]> {
  voiceList ??= runJob<VoiceInfo[]>({ kind: 'voices' }).catch((err: unknown) => {
    voiceList = null;
    throw upstreamError(err);
  });
  return voiceList;
}

/** A worker's failure is this step's upstream failure (failover and 502 rules apply); the audio cap stays the caller's 413. */
function upstreamError(err: unknown): unknown {
  if (!(err instanceof AudioJobError)) return err;
  if (err.code === 'voice_not_found') return new UpstreamFailure({ kind: 'http', status: 400, message: err.message });
  return new UpstreamFailure({ kind: 'connection', message: `offline speech engine: ${err.message}` });
}

/**
 * The offline engine as a provider: real speech, no network, sentence by sentence. The engine (GPL espeak-ng)
 * runs only in the audio worker processes; this adapter only moves the encoded bytes.
 */
export class EspeakAdapter implements ProviderAdapter {
  readonly kind = 'espeak' as const;
  readonly defaultVoice = ESPEAK_DEFAULT_VOICE;

  constructor(readonly provider: ResolvedProvider) {}

  speech(call: SpeechCall, ctx: CallContext): Promise<AudioStream> {
    // outputShape carries the MP3 bitrate really encoded (a rate's MPEG version caps it), for x-svc-audio-bitrate
    return Promise.resolve({ ...outputShape(call.output), chunks: this.chunks(call, ctx) });
  }

  private async *chunks(call: SpeechCall, ctx: CallContext): AsyncGenerator<Buffer> {
    const { text, voiceId: voice, speed, vol, pitch, output, maxSeconds } = call;
    try {
      // the key takes its turn for the pool's workers; the step's deadline waits with the job (decisions §11)
      yield* generate(
        { kind: 'speech', text, voice, speed, vol, pitch, output, ...(maxSeconds !== undefined ? { maxSeconds } : {}) },
        ctx.signal,
        undefined,
        jobOwner(ctx),
      );
    } catch (err) {
      throw upstreamError(err);
    }
  }

  voices(): Promise<VoiceInfo[]> {
    return listVoices();
  }

  async acceptsVoice(voiceId: string): Promise<boolean> {
    return (await listVoices()).some((voice) => voice.id === voiceId);
  }

  /** Healthy once a worker has started the engine and listed its voices. */
  async probe(): Promise<void> {
    await listVoices();
  }
}

/** Adapters of espeak providers; the engine itself starts in a worker on its first use (about 0.3 s once). */
@Injectable()
export class EspeakAdapterFactory implements AdapterFactory {
  readonly kind = 'espeak' as const;

  create(provider: ResolvedProvider): ProviderAdapter {
    return new EspeakAdapter(provider);
  }
}
