import { tinyWav } from '../../test/support/audio';
import { DomainError } from '../common/errors/domain-error';
import { MINIMAX_SAMPLE_RULES } from '../providers/minimax.adapter';
import { OPENAI_SAMPLE_RULES } from '../providers/openai.adapter';
import { checkSample, fileNameFor, sampleSeconds } from './voice-sample';

const refusal = (action: () => void): DomainError => {
  try {
    action();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
};

describe('voice samples', () => {
  it('measures a WAV sample from its header', () => {
    expect(sampleSeconds(tinyWav(16000 * 12), 'audio/wav')).toBeCloseTo(12, 5);
    expect(sampleSeconds(Buffer.from('RIFF-broken'), 'audio/wav')).toBeNull();
    expect(sampleSeconds(Buffer.alloc(100), 'audio/mp4')).toBeNull();
  });

  it("holds MiniMax's 10 s to 5 min rule", () => {
    expect(() => checkSample('mm', MINIMAX_SAMPLE_RULES, tinyWav(16000 * 10), 'audio/wav')).not.toThrow();
    expect(refusal(() => checkSample('mm', MINIMAX_SAMPLE_RULES, tinyWav(16000 * 9), 'audio/wav'))).toMatchObject({
      code: 'invalid_value',
      param: 'audio_sample',
    });
    expect(
      refusal(() => checkSample('mm', MINIMAX_SAMPLE_RULES, tinyWav(8000 * 301, 8000), 'audio/wav')).message,
    ).toMatch(/at most 300 s/);
  });

  it('refuses a type the provider does not take (415) and a sample over its size (413)', () => {
    expect(refusal(() => checkSample('mm', MINIMAX_SAMPLE_RULES, Buffer.alloc(10), 'audio/ogg'))).toMatchObject({
      code: 'unsupported_media_type',
      status: 415,
    });
    expect(
      refusal(() => checkSample('oa', OPENAI_SAMPLE_RULES, Buffer.alloc(11 * 1024 * 1024), 'audio/ogg')),
    ).toMatchObject({ code: 'file_too_large', status: 413 });
  });

  it("holds OpenAI's 30 s limit, and lets the provider judge a length that is not cheap to read", () => {
    expect(
      refusal(() => checkSample('oa', OPENAI_SAMPLE_RULES, tinyWav(8000 * 31, 8000), 'audio/wav')).message,
    ).toMatch(/at most 30 s/);
    expect(() => checkSample('mm', MINIMAX_SAMPLE_RULES, Buffer.alloc(100), 'audio/mp4')).not.toThrow();
  });

  it('names the uploaded file by its sniffed type', () => {
    expect(fileNameFor('audio/mpeg', 'sample')).toBe('sample.mp3');
    expect(fileNameFor('audio/mp4', 'sample')).toBe('sample.m4a');
  });
});
