/** What a RIFF/WAVE header says about its PCM payload. */
export interface WavInfo {
  /** 1 = integer PCM, 3 = IEEE float, 0xfffe = extensible. */
  formatTag: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  /** Byte offset and length of the `data` chunk's payload (length clipped to the bytes present). */
  dataOffset: number;
  dataLength: number;
}

/** Walks the RIFF chunks for `fmt ` and `data`; throws when the bytes are not a WAVE file. */
export function parseWavHeader(bytes: Uint8Array): WavInfo {
  const buf = asBuffer(bytes);
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') {
    throw new Error('not a RIFF/WAVE file');
  }
  let fmt: Omit<WavInfo, 'dataOffset' | 'dataLength'> | null = null;
  let offset = 12;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('latin1', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      fmt = {
        formatTag: buf.readUInt16LE(body),
        channels: buf.readUInt16LE(body + 2),
        sampleRate: buf.readUInt32LE(body + 4),
        bitsPerSample: buf.readUInt16LE(body + 14),
      };
    } else if (id === 'data') {
      if (!fmt) throw new Error('WAVE data chunk before its fmt chunk');
      // streaming writers put 0 or 0xffffffff here; the bytes present are the truth
      const dataLength = size === 0 || size === 0xffffffff ? buf.length - body : Math.min(size, buf.length - body);
      return { ...fmt, dataOffset: body, dataLength };
    }
    offset = body + size + (size % 2); // chunks are word-aligned
  }
  throw new Error('WAVE file without a data chunk');
}

/** The FLAC STREAMINFO block (always the first metadata block). */
export interface FlacStreamInfo {
  minBlockSize: number;
  maxBlockSize: number;
  minFrameSize: number;
  maxFrameSize: number;
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  /** Samples per channel; 0 means unknown (a stream encoded without knowing its length). */
  totalSamples: number;
  /** Hex MD5 of the decoded samples; all zeros when the encoder could not fill it in. */
  md5: string;
}

export function parseFlacStreamInfo(bytes: Uint8Array): FlacStreamInfo {
  const buf = asBuffer(bytes);
  if (buf.length < 42 || buf.toString('latin1', 0, 4) !== 'fLaC') throw new Error('not a FLAC stream');
  const blockType = buf[4] & 0x7f;
  const blockLength = buf.readUIntBE(5, 3);
  if (blockType !== 0 || blockLength !== 34) throw new Error('FLAC stream does not start with STREAMINFO');
  const b = 8;
  // sample rate (20 bits) | channels-1 (3) | bits-1 (5) | total samples (36), packed big-endian
  const packed = buf.readBigUInt64BE(b + 10);
  return {
    minBlockSize: buf.readUInt16BE(b),
    maxBlockSize: buf.readUInt16BE(b + 2),
    minFrameSize: buf.readUIntBE(b + 4, 3),
    maxFrameSize: buf.readUIntBE(b + 7, 3),
    sampleRate: Number(packed >> 44n),
    channels: Number((packed >> 41n) & 0x7n) + 1,
    bitsPerSample: Number((packed >> 36n) & 0x1fn) + 1,
    totalSamples: Number(packed & 0xfffffffffn),
    md5: buf.toString('hex', b + 18, b + 34),
  };
}

export type MpegVersion = '1' | '2' | '2.5';
export type Mp3ChannelMode = 'stereo' | 'joint_stereo' | 'dual_channel' | 'mono';

/** One MPEG audio frame header. */
export interface Mp3FrameHeader {
  offset: number;
  version: MpegVersion;
  layer: 1 | 2 | 3;
  /** Bits per second. */
  bitrate: number;
  sampleRate: number;
  channelMode: Mp3ChannelMode;
  channels: 1 | 2;
  /** Samples per channel in this frame. */
  samples: number;
  /** Frame length in bytes, padding included. */
  length: number;
}

const VERSIONS: Record<number, MpegVersion | null> = { 0: '2.5', 1: null, 2: '2', 3: '1' };
const SAMPLE_RATES: Record<MpegVersion, number[]> = {
  '1': [44100, 48000, 32000],
  '2': [22050, 24000, 16000],
  '2.5': [11025, 12000, 8000],
};
// kbps by [version 1 | 2/2.5][layer 1..3][index]
const BITRATES: Record<'1' | '2', Record<1 | 2 | 3, number[]>> = {
  '1': {
    1: [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    2: [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    3: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  },
  '2': {
    1: [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    3: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  },
};
const MODES: Mp3ChannelMode[] = ['stereo', 'joint_stereo', 'dual_channel', 'mono'];

/** Decodes the 4-byte frame header at `offset`, or returns null when it is not a valid one. */
export function readMp3FrameHeader(bytes: Uint8Array, offset: number): Mp3FrameHeader | null {
  if (offset + 4 > bytes.length) return null;
  const h = ((bytes[offset] << 24) | (bytes[offset + 1] << 16) | (bytes[offset + 2] << 8) | bytes[offset + 3]) >>> 0;
  if (h >>> 21 !== 0x7ff) return null;
  const version = VERSIONS[(h >>> 19) & 3];
  const layerBits = (h >>> 17) & 3;
  const bitrateIndex = (h >>> 12) & 15;
  const rateIndex = (h >>> 10) & 3;
  if (!version || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return null;
  const layer = (4 - layerBits) as 1 | 2 | 3;
  const padding = (h >>> 9) & 1;
  const channelMode = MODES[(h >>> 6) & 3];
  const kbps = BITRATES[version === '1' ? '1' : '2'][layer][bitrateIndex];
  const sampleRate = SAMPLE_RATES[version][rateIndex];
  const samples = layer === 1 ? 384 : layer === 2 || version === '1' ? 1152 : 576;
  const length =
    layer === 1
      ? (Math.floor((12 * kbps * 1000) / sampleRate) + padding) * 4
      : Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  return {
    offset,
    version,
    layer,
    bitrate: kbps * 1000,
    sampleRate,
    channelMode,
    channels: channelMode === 'mono' ? 1 : 2,
    samples,
    length,
  };
}

/** Byte length of a leading ID3v2 tag (0 when there is none). */
export function id3v2Length(bytes: Uint8Array): number {
  if (bytes.length < 10 || bytes[0] !== 0x49 || bytes[1] !== 0x44 || bytes[2] !== 0x33) return 0;
  const size = (bytes[6] << 21) | (bytes[7] << 14) | (bytes[8] << 7) | bytes[9];
  return 10 + size + (bytes[5] & 0x10 ? 10 : 0);
}

/** The first frame header after any ID3v2 tag, requiring the next frame to follow it (no false syncs). */
export function parseFirstMp3Frame(bytes: Uint8Array): Mp3FrameHeader {
  for (let offset = id3v2Length(bytes); offset + 4 <= bytes.length; offset++) {
    const frame = readMp3FrameHeader(bytes, offset);
    if (!frame) continue;
    const end = offset + frame.length;
    if (end === bytes.length || readMp3FrameHeader(bytes, end)) return frame;
  }
  throw new Error('no MPEG audio frame found');
}

/** Every frame, back to back from the first one: the whole stream's shape and duration. */
export interface Mp3StreamInfo {
  frames: number;
  first: Mp3FrameHeader;
  /** Samples per channel over all frames (includes the encoder's delay and padding). */
  samples: number;
  durationSeconds: number;
  /** True when every frame has the first frame's version, rate and channel mode. */
  uniform: boolean;
  /** Bytes after the last whole frame (0 for a clean stream). */
  trailingBytes: number;
}

export function scanMp3Frames(bytes: Uint8Array): Mp3StreamInfo {
  const first = parseFirstMp3Frame(bytes);
  let offset = first.offset;
  let frames = 0;
  let samples = 0;
  let uniform = true;
  for (
    let frame = readMp3FrameHeader(bytes, offset);
    frame && offset + frame.length <= bytes.length;
    frame = readMp3FrameHeader(bytes, offset)
  ) {
    uniform &&=
      frame.version === first.version &&
      frame.sampleRate === first.sampleRate &&
      frame.channelMode === first.channelMode;
    frames += 1;
    samples += frame.samples;
    offset += frame.length;
  }
  return {
    frames,
    first,
    samples,
    durationSeconds: samples / first.sampleRate,
    uniform,
    trailingBytes: bytes.length - offset,
  };
}

/** Frames (samples per channel) in raw 16-bit PCM; throws when the length is not whole frames. */
export function pcmFrameCount(byteLength: number, channels: number): number {
  const frameBytes = 2 * channels;
  if (byteLength % frameBytes !== 0)
    throw new RangeError(`${byteLength} bytes is not a whole number of ${channels}-channel 16-bit frames`);
  return byteLength / frameBytes;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
