import { openEncoder, type StreamEncoder } from '../audio/pool/pool-jobs';
import { DomainError } from '../common/errors/domain-error';
import type { SpeechOutput } from '../providers/provider-adapter';

/**
 * One flac or opus stream over every step of an answer (decisions §7): raw s16le in, as each step makes it, the
 * encoded stream out, encoded in the audio pool (never on the main thread). A step that broke mid-sample leaves
 * its partial frame behind: the next step's audio starts on a whole frame.
 */
export class EncodedAcrossSteps {
  private readonly encoder: StreamEncoder;
  private readonly frameBytes: number;
  private partial: Buffer = Buffer.alloc(0);
  private ended = false;

  constructor(output: SpeechOutput, keyId: string) {
    const { format, sampleRate, channels, bitrate } = output;
    if (format !== 'flac' && format !== 'opus') throw new RangeError(`${format} is not encoded across steps`);
    this.encoder = openEncoder({ format, sampleRate, channels, bitrate }, undefined, { key: keyId });
    this.frameBytes = 2 * channels;
  }

  /** The encoded bytes `pcm` completes (maybe none: the encoders work in blocks). */
  async push(pcm: Buffer): Promise<Buffer> {
    const all = this.partial.length > 0 ? Buffer.concat([this.partial, pcm]) : pcm;
    const whole = all.length - (all.length % this.frameBytes);
    this.partial = Buffer.from(all.subarray(whole));
    if (whole === 0) return Buffer.alloc(0);
    // a copy: the samples must start on an even offset, and the worker takes the bytes as they are
    const samples = new Int16Array(all.buffer.slice(all.byteOffset, all.byteOffset + whole));
    return this.failing(() => this.encoder.push(samples));
  }

  /** A later step takes over: the broken step's truncated sample is dropped, not joined to the next one's. */
  nextStep(): void {
    this.partial = Buffer.alloc(0);
  }

  /** The encoder's last bytes (FLAC's short last block, Ogg's last page). */
  end(): Promise<Buffer> {
    this.ended = true;
    return this.failing(() => this.encoder.end());
  }

  release(): void {
    if (!this.ended) this.encoder.release();
    this.ended = true;
  }

  /** The gateway's own failure, not the provider's: no later step is asked to mend it. */
  private async failing(work: () => Promise<Buffer>): Promise<Buffer> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof DomainError) throw err;
      throw new DomainError('internal_error', `The audio encoder failed: ${(err as Error).message}.`);
    }
  }
}
