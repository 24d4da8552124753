import { createStreamingEncoder, encodeAudio } from '../audio/encoders';
import { parseFlacStreamInfo } from '../audio/parse';
import type { SpeechJob } from '../speech/speech-job';
import { extraInfo } from './extra-info';

const job = (format: SpeechJob['output']['format'], text = 'Two words'): SpeechJob => ({
  model: 'm',
  text,
  voiceId: 'v',
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format, sampleRate: 16000, bitrate: 128000, channels: 1 },
});

describe('extra_info', () => {
  it('reads the length from the audio itself (wav, mp3, flac, pcm) and counts characters as code points', async () => {
    const samples = new Int16Array(16000); // one second
    for (const format of ['wav', 'mp3', 'flac', 'pcm'] as const) {
      const { bytes } = await encodeAudio({ samples, sampleRate: 16000, channels: 1 }, format, 128000);
      const info = extraInfo(job(format, 'Hi 👋'), bytes, 128000);
      expect(info).toMatchObject({
        audio_sample_rate: 16000,
        audio_channel: 1,
        audio_format: format,
        audio_size: bytes.length,
        usage_characters: 4,
        word_count: 2,
      });
      expect(Math.abs(info.audio_length - 1000)).toBeLessThan(150);
    }
  });

  it('reads the length of a FLAC stream encoded live (STREAMINFO says 0 samples) from its frames', async () => {
    const encoder = await createStreamingEncoder('flac', { sampleRate: 16000, channels: 1, bitrate: 128000 });
    const bytes = Buffer.concat([encoder.push(new Int16Array(24000)), encoder.end()]); // 1.5 s
    expect(parseFlacStreamInfo(bytes).totalSamples).toBe(0);
    expect(extraInfo(job('flac'), bytes, 128000).audio_length).toBe(1500);
  });
});
