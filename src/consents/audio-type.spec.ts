import { sniffAudioType } from './audio-type';

const wav = (): Buffer => {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  return header;
};

describe('sniffAudioType', () => {
  it('recognises WAV from its RIFF header', async () => {
    expect(await sniffAudioType(wav())).toBe('audio/wav');
  });

  it('recognises FLAC and Ogg by their magic numbers', async () => {
    expect(await sniffAudioType(Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(60)]))).toBe('audio/flac');
    const ogg = Buffer.concat([
      Buffer.from('OggS\0\x02'),
      Buffer.alloc(22),
      Buffer.from('\x01vorbis'),
      Buffer.alloc(40),
    ]);
    expect(await sniffAudioType(ogg)).toBe('audio/ogg');
  });

  it('recognises MP3 with an ID3 tag', async () => {
    const id3 = Buffer.concat([
      Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x00'),
      Buffer.from([0xff, 0xfb, 0x90, 0x64]),
      Buffer.alloc(400),
    ]);
    expect(await sniffAudioType(id3)).toBe('audio/mpeg');
  });

  it('refuses text, images and empty input whatever they are called', async () => {
    expect(await sniffAudioType(Buffer.from('hello, this is not audio at all'))).toBeNull();
    expect(await sniffAudioType(Buffer.from('\x89PNG\r\n\x1a\n' + '\0'.repeat(40), 'binary'))).toBeNull();
    expect(await sniffAudioType(Buffer.alloc(0))).toBeNull();
  });
});
