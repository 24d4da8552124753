import { randomInt } from 'node:crypto';
import OpusScript from 'opusscript';
import type { AudioEncoder } from './encoder';
import { OGG_BOS, OGG_EOS, OggStreamWriter } from './ogg';
import { StreamResampler } from './pcm-stream';

/** Rates libopus encodes at; anything else is resampled to 48 kHz first (Opus decodes at 48 kHz anyway). */
const OPUS_RATES = [8000, 12000, 16000, 24000, 48000] as const;
type OpusRate = (typeof OPUS_RATES)[number];
/** 20 ms frames: libopus's usual choice for speech. */
const FRAME_MS = 20;
/** libopus's lookahead at the default application, in 48 kHz samples (Fs/400 + Fs/250): the pre-skip of RFC 7845. */
const PRE_SKIP = 312;
/** libopus's bitrate range per stream. */
const MIN_BITRATE = 6000;
const MAX_BITRATE = 510000;

export const OGG_OPUS_CONTENT_TYPE = 'audio/ogg;codecs=opus';

/** RFC 7845 §5.1: the identification header. `inputRate` is informational (what the audio was made at). */
function opusHead(channels: number, inputRate: number): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head.writeUInt8(1, 8); // version
  head.writeUInt8(channels, 9);
  head.writeUInt16LE(PRE_SKIP, 10);
  head.writeUInt32LE(inputRate, 12);
  head.writeInt16LE(0, 16); // output gain
  head.writeUInt8(0, 18); // mapping family 0: mono or stereo
  return head;
}

/** RFC 7845 §5.2: the comment header (vendor string, no comments). */
function opusTags(): Buffer {
  const vendor = Buffer.from('libopus (opusscript)', 'utf8');
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write('OpusTags', 0, 'latin1');
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  tags.writeUInt32LE(0, 12 + vendor.length);
  return tags;
}

/**
 * Incremental Ogg Opus (RFC 7845) with libopus: the headers come out with the first push, then a page per push of
 * the 20 ms packets it completed. The last packet is held back so `end` can mark the end of stream on a page with it,
 * and its granule trims the padding: a decoder plays exactly the samples pushed.
 */
export function createOpusEncoder(sampleRate: number, channels: number, bitrate: number): AudioEncoder {
  if (channels !== 1 && channels !== 2) throw new RangeError(`Opus here carries 1 or 2 channels, got ${channels}`);
  const rate: OpusRate = (OPUS_RATES as readonly number[]).includes(sampleRate) ? (sampleRate as OpusRate) : 48000;
  const resampler = rate === sampleRate ? null : new StreamResampler(sampleRate, rate, channels);
  const encoder = new OpusScript(rate, channels, OpusScript.Application.AUDIO);
  encoder.setBitrate(Math.min(MAX_BITRATE, Math.max(MIN_BITRATE, bitrate)));
  const frame = (rate * FRAME_MS) / 1000;
  const toGranule = 48000 / rate;
  const ogg = new OggStreamWriter(randomInt(0, 2 ** 32));
  let pending = new Int16Array(0);
  let held: { data: Buffer; granule: bigint } | null = null;
  let packets = 0;
  /** Samples per channel pushed (at the encoder's rate): the final granule is counted from these, not the padding. */
  let frames = 0;
  let started = false;
  let deleted = false;

  const release = (): void => {
    if (!deleted) encoder.delete();
    deleted = true;
  };
  const headers = (): Buffer => {
    if (started) return Buffer.alloc(0);
    started = true;
    return Buffer.concat([ogg.page([opusHead(channels, sampleRate)], 0n, OGG_BOS), ogg.page([opusTags()], 0n)]);
  };
  const resampled = (samples: Int16Array, final: boolean): Int16Array => {
    if (!resampler) return samples;
    const planes = Array.from({ length: channels }, () => new Float32Array(samples.length / channels));
    for (let i = 0, at = 0; i < planes[0].length; i++)
      for (let c = 0; c < channels; c++) planes[c][i] = samples[at++] / 32768;
    const out = final ? resampler.end(planes) : resampler.push(planes);
    const pcm = new Int16Array(out[0].length * channels);
    for (let i = 0, at = 0; i < out[0].length; i++) {
      for (let c = 0; c < channels; c++) {
        const v = Math.round(out[c][i] * 32768);
        pcm[at++] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      }
    }
    return pcm;
  };
  /** Encodes every whole frame of `pending`; returns the packets, each with the granule at its end. */
  const encodeFrames = (): Array<{ data: Buffer; granule: bigint }> => {
    const out: Array<{ data: Buffer; granule: bigint }> = [];
    const step = frame * channels;
    let at = 0;
    for (; at + step <= pending.length; at += step) {
      const pcm = pending.subarray(at, at + step);
      const data = encoder.encode(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), frame);
      packets += 1;
      out.push({ data, granule: BigInt(packets * frame * toGranule) });
    }
    pending = pending.slice(at);
    return out;
  };
  const append = (samples: Int16Array): void => {
    frames += samples.length / channels;
    const joined = new Int16Array(pending.length + samples.length);
    joined.set(pending);
    joined.set(samples, pending.length);
    pending = joined;
  };

  return {
    contentType: OGG_OPUS_CONTENT_TYPE,
    push(samples: Int16Array): Buffer {
      if (samples.length % channels !== 0) throw new RangeError('interleaved samples must hold whole frames');
      const head = headers();
      append(resampled(samples, false));
      const ready = encodeFrames();
      if (ready.length === 0) return head;
      const out = held ? [held, ...ready] : ready;
      held = out.pop() ?? null;
      return Buffer.concat([head, ogg.pages(out)]);
    },
    end(): Buffer {
      try {
        const head = headers();
        append(resampled(new Int16Array(0), true));
        // the encoder's lookahead delays the audio by PRE_SKIP: zeros past the end flush the last of it out
        const total = frames;
        const flush = Math.ceil(PRE_SKIP / toGranule) + frame;
        const padding = (frame - ((pending.length / channels + flush) % frame)) % frame;
        const padded = new Int16Array(pending.length + (flush + padding) * channels);
        padded.set(pending);
        pending = padded;
        const out = held ? [held, ...encodeFrames()] : encodeFrames();
        held = null;
        const last = out[out.length - 1];
        // end trimming (RFC 7845 §4.4): the last granule says where the real audio stops
        last.granule = BigInt(PRE_SKIP + total * toGranule);
        return Buffer.concat([head, ogg.pages(out, OGG_EOS)]);
      } finally {
        release();
      }
    },
  };
}
