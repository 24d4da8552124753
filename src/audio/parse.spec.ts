import {
  id3v2Length,
  parseFirstMp3Frame,
  parseFlacStreamInfo,
  parseWavHeader,
  pcmFrameCount,
  readMp3FrameHeader,
} from './parse';
import { wavHeader } from './wav';

describe('parseWavHeader', () => {
  it('reads rate, channels, bits and the data length, skipping chunks it does not know', () => {
    const header = wavHeader(24000, 2, 8);
    // splice a LIST chunk between fmt and data, as many writers do
    const list = Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.from([3, 0, 0, 0]), Buffer.from([1, 2, 3, 0])]);
    const bytes = Buffer.concat([header.subarray(0, 36), list, header.subarray(36), Buffer.alloc(8)]);
    expect(parseWavHeader(bytes)).toEqual({
      formatTag: 1,
      channels: 2,
      sampleRate: 24000,
      bitsPerSample: 16,
      dataOffset: 56,
      dataLength: 8,
    });
  });

  it('takes the bytes present as the data when a streaming writer left the size unknown', () => {
    const header = wavHeader(16000, 1, 0);
    header.writeUInt32LE(0xffffffff, 40);
    expect(parseWavHeader(Buffer.concat([header, Buffer.alloc(10)])).dataLength).toBe(10);
  });

  it('rejects bytes that are not a WAVE file', () => {
    expect(() => parseWavHeader(Buffer.from('ID3 not a wave file'))).toThrow('not a RIFF/WAVE file');
  });
});

describe('MP3 frame headers', () => {
  // MPEG-1 Layer III, 128 kbps, 44100 Hz, joint stereo, no padding: 417-byte frames
  const frame = (): Buffer => Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)]);

  it('decodes version, layer, bitrate, rate and channel mode', () => {
    expect(readMp3FrameHeader(frame(), 0)).toEqual({
      offset: 0,
      version: '1',
      layer: 3,
      bitrate: 128000,
      sampleRate: 44100,
      channelMode: 'joint_stereo',
      channels: 2,
      samples: 1152,
      length: 417,
    });
  });

  it('finds the first frame after an ID3v2 tag and ignores a false sync inside it', () => {
    const tag = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 6, 0xff, 0xfb, 0x90, 0x64, 0, 0]);
    const bytes = Buffer.concat([tag, frame(), frame()]);
    expect(id3v2Length(bytes)).toBe(16);
    expect(parseFirstMp3Frame(bytes).offset).toBe(16);
  });

  it('rejects reserved header values', () => {
    expect(readMp3FrameHeader(Buffer.from([0xff, 0xfb, 0xf0, 0x64]), 0)).toBeNull(); // bitrate index 15
    expect(readMp3FrameHeader(Buffer.from([0xff, 0xeb, 0x90, 0x64]), 0)).toBeNull(); // reserved version
  });
});

describe('parseFlacStreamInfo', () => {
  it('unpacks the 20/3/5/36-bit fields of STREAMINFO', () => {
    const info = Buffer.alloc(42);
    info.write('fLaC', 0, 'latin1');
    info.writeUIntBE(34, 5, 3);
    info.writeUInt16BE(4096, 8);
    info.writeUInt16BE(4096, 10);
    // 44100 Hz, 2 channels, 16 bits, 123456 samples
    info.writeBigUInt64BE((44100n << 44n) | (1n << 41n) | (15n << 36n) | 123456n, 18);
    expect(parseFlacStreamInfo(info)).toMatchObject({
      sampleRate: 44100,
      channels: 2,
      bitsPerSample: 16,
      totalSamples: 123456,
      minBlockSize: 4096,
    });
  });

  it('rejects bytes without the fLaC marker', () => {
    expect(() => parseFlacStreamInfo(Buffer.alloc(42))).toThrow('not a FLAC stream');
  });
});

describe('pcmFrameCount', () => {
  it('counts whole frames and refuses a torn one', () => {
    expect(pcmFrameCount(8, 2)).toBe(2);
    expect(() => pcmFrameCount(6, 2)).toThrow(RangeError);
  });
});
