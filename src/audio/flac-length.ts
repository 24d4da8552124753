import { parseFlacStreamInfo } from './parse';

/**
 * A FLAC file made by a live encoder says 0 total samples ("unknown", which FLAC allows for a stream whose
 * header went out first). For an answer assembled whole, the length is written into STREAMINFO afterwards,
 * from the last frame's header (its frame or sample number and block size). The MD5 stays 0 ("not known"):
 * only decoding would give it. Returns the bytes as they are when they are not FLAC or hold no frame.
 */
export function withFlacLength(bytes: Buffer): Buffer {
  let info;
  try {
    info = parseFlacStreamInfo(bytes);
  } catch {
    return bytes;
  }
  if (info.totalSamples > 0) return bytes;
  const last = lastFrame(bytes, audioStart(bytes), info.channels);
  if (!last) return bytes;
  const total = last.variable ? last.number + last.blockSize : last.number * info.maxBlockSize + last.blockSize;
  const out = Buffer.from(bytes);
  const at = 8 + 10;
  const packed = out.readBigUInt64BE(at);
  out.writeBigUInt64BE((packed & ~0xfffffffffn) | BigInt(total), at);
  return out;
}

/** Where the frames begin: past every metadata block (the last one has its top bit set). */
function audioStart(bytes: Buffer): number {
  let offset = 4;
  for (;;) {
    if (offset + 4 > bytes.length) return bytes.length;
    const last = (bytes[offset] & 0x80) !== 0;
    offset += 4 + bytes.readUIntBE(offset + 1, 3);
    if (last) return offset;
  }
}

interface FrameHeader {
  variable: boolean;
  /** The frame number (fixed block size) or the first sample's number (variable). */
  number: number;
  blockSize: number;
}

/** The last frame header of the audio: the last sync code whose header is well formed and passes its CRC-8. */
function lastFrame(bytes: Buffer, start: number, channels: number): FrameHeader | null {
  for (let i = bytes.length - 6; i >= start; i--) {
    if (bytes[i] !== 0xff || (bytes[i + 1] & 0xfe) !== 0xf8) continue;
    const header = frameHeaderAt(bytes, i, channels);
    if (header) return header;
  }
  return null;
}

function frameHeaderAt(bytes: Buffer, i: number, channels: number): FrameHeader | null {
  const blockCode = bytes[i + 2] >> 4;
  const rateCode = bytes[i + 2] & 0x0f;
  const channelCode = bytes[i + 3] >> 4;
  const sizeCode = (bytes[i + 3] >> 1) & 0x07;
  if (blockCode === 0 || rateCode === 15 || (bytes[i + 3] & 1) !== 0 || sizeCode === 3 || sizeCode === 7) return null;
  if (channelCode > 10 || (channelCode < 8 ? channelCode + 1 : 2) !== channels) return null;
  // the frame or sample number, UTF-8 coded (up to 7 bytes for 36 bits)
  let p = i + 4;
  const first = bytes[p++];
  let extra = 0;
  while (extra < 7 && first & (0x80 >> extra)) extra++;
  if (extra === 1 || extra > 7) return null;
  const bytesAfter = extra === 0 ? 0 : extra - 1;
  let number = extra === 0 ? first : first & (0xff >> (extra + 1));
  for (let k = 0; k < bytesAfter; k++) {
    const b = bytes[p++];
    if (b === undefined || (b & 0xc0) !== 0x80) return null;
    number = number * 64 + (b & 0x3f);
  }
  let blockSize: number;
  if (blockCode === 1) blockSize = 192;
  else if (blockCode <= 5) blockSize = 576 << (blockCode - 2);
  else if (blockCode === 6) blockSize = bytes[p++] + 1;
  else if (blockCode === 7) {
    blockSize = bytes.readUInt16BE(p) + 1;
    p += 2;
  } else blockSize = 256 << (blockCode - 8);
  if (rateCode === 12) p += 1;
  else if (rateCode === 13 || rateCode === 14) p += 2;
  if (p >= bytes.length || crc8(bytes, i, p) !== bytes[p]) return null;
  return { variable: (bytes[i + 1] & 1) === 1, number, blockSize };
}

/** FLAC's header CRC-8 (polynomial x^8 + x^2 + x + 1, initial 0) of bytes[from, to). */
function crc8(bytes: Buffer, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) {
    crc ^= bytes[i];
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x80 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff;
  }
  return crc;
}
