/** A short valid mono 16-bit WAV (a 440 Hz tone), enough for the audio sniffer and for uploads. */
export function tinyWav(samples = 1600, sampleRate = 16000): Buffer {
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i += 1)
    data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

/** Bytes that are no audio format at all (a PNG signature and padding), whatever the file is called. */
export const notAudio = (): Buffer =>
  Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 0x41)]);

/** Every output format at each of `sampleRates`, mono and stereo: the cases an adapter must return exactly as asked. */
export const formatMatrix = (
  sampleRates: readonly number[],
): Array<readonly ['mp3' | 'wav' | 'pcm' | 'flac', number, 1 | 2]> =>
  (['mp3', 'wav', 'pcm', 'flac'] as const).flatMap((format) =>
    sampleRates.flatMap((sampleRate) => ([1, 2] as const).map((channels) => [format, sampleRate, channels] as const)),
  );
