import { Injectable, Logger } from '@nestjs/common';
import type { ResolvedProvider } from '../../config/gateway-config';
import type { AdapterFactory, AudioStream, CallContext, ProviderAdapter, SpeechCall, VoiceInfo } from '../../failover/provider-adapter';
import { UpstreamFailure } from '../../failover/provider-adapter';
import { encodeAll } from '../audio/encoder';
import { createStreamingEncoder, encodeAudio } from '../audio/encoders';
import { outputShape } from '../audio/transcoder';
import { ESPEAK_DEFAULT_VOICE, EspeakEngine, EspeakVoiceNotFoundError, SynthesisOptions, SynthesizedAudio } from './espeak-engine';

/** The offline engine as a provider: real speech, no network, sentence by sentence. */
export class EspeakAdapter implements ProviderAdapter {
  readonly kind = 'espeak' as const;
  readonly defaultVoice = ESPEAK_DEFAULT_VOICE;

  constructor(
    readonly provider: ResolvedProvider,
    private readonly engine: EspeakEngine,
  ) {}

  speech(call: SpeechCall, ctx: CallContext): Promise<AudioStream> {
    const options: SynthesisOptions = {
      voice: call.voiceId,
      speed: call.speed,
      vol: call.vol,
      pitch: call.pitch,
      sampleRate: call.output.sampleRate,
      channels: call.output.channels,
    };
    // outputShape carries the MP3 bitrate really encoded (a rate's MPEG version caps it), for x-svc-audio-bitrate
    return Promise.resolve({ ...outputShape(call.output), chunks: this.chunks(call, options, ctx.signal) });
  }

  private async *chunks(call: SpeechCall, options: SynthesisOptions, signal: AbortSignal): AsyncGenerator<Buffer> {
    try {
      const { output } = call;
      if (output.format === 'wav') {
        // a WAV header needs the length first: the whole clip is made, then sent
        const audio = await this.engine.synthesize(call.text, options);
        yield (await encodeAudio(audio, 'wav', output.bitrate)).bytes;
        return;
      }
      const encoder = await createStreamingEncoder(output.format, output);
      yield* encodeAll(encoder, samplesOf(this.engine.stream(call.text, options)), signal);
    } catch (err) {
      if (err instanceof EspeakVoiceNotFoundError) throw new UpstreamFailure({ kind: 'http', status: 400, message: err.message });
      throw err;
    }
  }

  async voices(): Promise<VoiceInfo[]> {
    return this.engine.listVoices();
  }

  async acceptsVoice(voiceId: string): Promise<boolean> {
    return (await this.engine.listVoices()).some((voice) => voice.id === voiceId);
  }

  /** The engine is in-process: it is healthy once it has started. */
  async probe(): Promise<void> {
    await this.engine.warmUp();
  }
}

let sharedEngine: EspeakEngine | null = null;

/**
 * One engine per process, shared by every espeak provider. It is started by its first use (about
 * 0.3 s once), not at boot: it holds about 90 MB, which a gateway that only relays to upstream
 * providers should not carry.
 */
@Injectable()
export class EspeakAdapterFactory implements AdapterFactory {
  readonly kind = 'espeak' as const;
  private readonly logger = new Logger(EspeakAdapterFactory.name);

  create(provider: ResolvedProvider): ProviderAdapter {
    sharedEngine ??= new EspeakEngine({
      onStart: (ms) => this.logger.log(`offline speech engine started in ${ms} ms`),
      onStartFailed: (err) => this.logger.error(`offline speech engine failed to start: ${err.message}`),
    });
    return new EspeakAdapter(provider, sharedEngine);
  }
}

async function* samplesOf(pieces: AsyncIterable<SynthesizedAudio>): AsyncGenerator<Int16Array> {
  for await (const piece of pieces) yield piece.samples;
}
