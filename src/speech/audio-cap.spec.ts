import { DomainError } from '../common/errors/domain-error';
import { assertAudioFits, encodedSeconds, minimumAudioSeconds } from './audio-cap';

describe('audio cap: the predictable part', () => {
  it('counts only what is spoken, faster at a higher speed', () => {
    expect(minimumAudioSeconds('a'.repeat(600), 1)).toBe(10);
    expect(minimumAudioSeconds('a'.repeat(600), 2)).toBe(5);
    expect(minimumAudioSeconds('. . . ,,, !!!', 1)).toBe(0);
    expect(minimumAudioSeconds('你好世界', 1)).toBeCloseTo(4 / 60);
  });

  it('refuses with 413 audio_too_long only past the cap', () => {
    expect(() => assertAudioFits('a'.repeat(600), 1, 10)).not.toThrow();
    let error: unknown;
    try {
      assertAudioFits('a'.repeat(601), 1, 10);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).status).toBe(413);
    expect((error as DomainError).code).toBe('audio_too_long');
  });
});

describe('audio cap: seconds counted from encoded bytes', () => {
  it('pcm and wav by frames, mp3 by its constant bitrate, FLAC not at all', () => {
    expect(encodedSeconds(32000, { format: 'pcm', sampleRate: 16000, channels: 1 }, 0)).toBe(1);
    expect(encodedSeconds(64000, { format: 'wav', sampleRate: 16000, channels: 2 }, 0)).toBe(1);
    expect(encodedSeconds(16000, { format: 'mp3', sampleRate: 32000, channels: 1 }, 128000)).toBe(1);
    expect(encodedSeconds(16000, { format: 'flac', sampleRate: 32000, channels: 1 }, 128000)).toBeNull();
  });
});
