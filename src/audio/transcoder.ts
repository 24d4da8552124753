import {
  contentTypeFor,
  createStreamingEncoder,
  mp3Bitrate,
  notEncoded,
  type AudioEncoder,
  type AudioFormat,
} from './encoders';
import { mulawWavSink } from './mulaw';
import { encodeAll } from './encoder';
import { decodePcm16le, encodePcm16le } from './pcm';
import { StreamLimiter, StreamResampler } from './pcm-stream';
import { wavHeader } from './wav';

/** The audio a transcoder must produce (a SpeechOutput fits). */
export interface TranscodeOutput {
  format: AudioFormat;
  sampleRate: number;
  channels: number;
  /** Requested bits per second (MP3 only). */
  bitrate: number;
}

/** Shape of raw interleaved 16-bit input. */
export type PcmShape = { sampleRate: number; channels: number };

export interface TranscoderOptions {
  fromRate: number;
  fromChannels: number;
  output: TranscodeOutput;
  /** Linear gain (MiniMax `vol`, 1 = unchanged); above 1 a look-ahead limiter keeps peaks from clipping. */
  gain?: number;
}

/** Incremental: `push` returns the output bytes ready so far (maybe none), `end` the rest; all returns concatenated are the file. */
export interface Transcoder {
  readonly contentType: string;
  /** MP3 only: the bitrate really encoded. */
  readonly bitrate?: number;
  push(pcm: Int16Array): Buffer;
  end(): Buffer;
}

/** Content-Type and real MP3 bitrate of an output, known before any byte is encoded. */
export function outputShape(output: TranscodeOutput): { contentType: string; bitrate?: number } {
  const contentType = contentTypeFor(output.format, output.sampleRate, output.channels);
  return output.format === 'mp3'
    ? { contentType, bitrate: mp3Bitrate(output.sampleRate, output.channels, output.bitrate) }
    : { contentType };
}

export async function createTranscoder(options: TranscoderOptions): Promise<Transcoder> {
  const { fromRate, fromChannels, output, gain = 1 } = options;
  if (!Number.isInteger(fromChannels) || fromChannels < 1)
    throw new RangeError(`input channels must be a positive integer, got ${fromChannels}`);
  if (fromChannels !== output.channels && Math.min(fromChannels, output.channels) !== 1)
    throw new RangeError(`cannot map ${fromChannels} channels to ${output.channels}`);
  if (!(gain > 0)) throw new RangeError(`gain must be positive, got ${gain}`);
  // work on as few channels as possible: mix down before resampling, duplicate up after
  const working = Math.min(fromChannels, output.channels);
  const resampler = fromRate === output.sampleRate ? null : new StreamResampler(fromRate, output.sampleRate, working);
  const limiter = gain > 1 ? new StreamLimiter(gain, output.sampleRate, working) : null;
  const sink = await createOutputEncoder(output);

  const process = (planes: Float32Array[], final: boolean): Buffer => {
    let out = resampler ? (final ? resampler.end(planes) : resampler.push(planes)) : planes;
    if (limiter) out = limiter.process(out, final);
    else if (gain !== 1) for (const plane of out) for (let i = 0; i < plane.length; i++) plane[i] *= gain;
    const bytes = out[0].length > 0 ? sink.push(interleave(out, output.channels)) : Buffer.alloc(0);
    return final ? Buffer.concat([bytes, sink.end()]) : bytes;
  };
  return {
    contentType: sink.contentType,
    ...(sink.bitrate !== undefined ? { bitrate: sink.bitrate } : {}),
    push: (pcm) => {
      if (pcm.length % fromChannels !== 0) throw new RangeError('interleaved samples must hold whole frames');
      return process(toPlanes(pcm, fromChannels, working), false);
    },
    end: () => process(toPlanes(new Int16Array(0), fromChannels, working), true),
  };
}

/** Raw s16le bytes in, `output` bytes out as they become ready; chunks may split samples and frames anywhere. */
export async function* transcodeStream(
  source: AsyncIterable<Buffer>,
  from: PcmShape,
  output: TranscodeOutput,
  options: { gain?: number } = {},
): AsyncGenerator<Buffer> {
  const transcoder = await createTranscoder({
    fromRate: from.sampleRate,
    fromChannels: from.channels,
    output,
    gain: options.gain,
  });
  yield* encodeAll(transcoder, wholeFrames(source, 2 * from.channels));
}

/** The samples of whole frames; a partial last frame is a truncated sample: dropped rather than padded into a click. */
async function* wholeFrames(source: AsyncIterable<Buffer>, frameBytes: number): AsyncGenerator<Int16Array> {
  let carry = Buffer.alloc(0);
  for await (const chunk of source) {
    const bytes = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    const whole = bytes.length - (bytes.length % frameBytes);
    carry = Buffer.from(bytes.subarray(whole));
    if (whole > 0) yield decodePcm16le(bytes.subarray(0, whole));
  }
}

/** The encoder of a whole output: streaming formats as they go, the WAVs held until their length is known. */
export async function createOutputEncoder(output: TranscodeOutput): Promise<AudioEncoder> {
  switch (output.format) {
    case 'wav':
      return wavSink(output);
    case 'pcmu_wav':
      return mulawWavSink(output.sampleRate, output.channels);
    case 'aac':
      throw new RangeError(notEncoded('aac'));
    case 'mp3':
    case 'pcm':
    case 'flac':
    case 'opus':
    case 'pcmu_raw':
      return createStreamingEncoder(output.format, output);
  }
}

/** WAV's header carries the data length, so the PCM is kept and sent whole at the end. */
export function wavSink(output: TranscodeOutput): AudioEncoder {
  const parts: Buffer[] = [];
  return {
    contentType: contentTypeFor('wav', output.sampleRate, output.channels),
    push: (samples) => (parts.push(encodePcm16le(samples)), Buffer.alloc(0)),
    end: () => {
      const data = Buffer.concat(parts.splice(0));
      return Buffer.concat([wavHeader(output.sampleRate, output.channels, data.length), data]);
    },
  };
}

function toPlanes(pcm: Int16Array, channels: number, working: number): Float32Array[] {
  const frames = pcm.length / channels;
  const planes = Array.from({ length: working }, () => new Float32Array(frames));
  if (working === channels) {
    for (let i = 0, at = 0; i < frames; i++) for (let c = 0; c < channels; c++) planes[c][i] = pcm[at++] / 32768;
    return planes;
  }
  // down to mono: the channels' mean, so a full-scale stereo signal stays full scale
  const scale = 1 / (32768 * channels);
  for (let i = 0, at = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += pcm[at++];
    planes[0][i] = sum * scale;
  }
  return planes;
}

function interleave(planes: Float32Array[], channels: number): Int16Array {
  const frames = planes[0].length;
  const out = new Int16Array(frames * channels);
  for (let i = 0, at = 0; i < frames; i++) {
    for (let c = 0; c < channels; c++) {
      const v = Math.round(planes[planes.length === 1 ? 0 : c][i] * 32768);
      out[at++] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
  }
  return out;
}
