import { DomainError } from '../common/errors/domain-error';
import { assertTextLimit, characterCount } from './speech-job';
import { planChunks } from './tasks/chunk-plan';

describe('characterCount', () => {
  it('counts code points: an emoji or a supplementary ideograph is one character', () => {
    expect(characterCount('')).toBe(0);
    expect(characterCount('héllo')).toBe(5);
    expect(characterCount('🎤🎤')).toBe(2);
    expect(characterCount('𠀀a𠀁')).toBe(3);
  });

  it('counts a lone surrogate as one character', () => {
    expect(characterCount('a\uD800')).toBe(2);
    expect(characterCount('\uDC00b')).toBe(2);
  });
});

describe('assertTextLimit', () => {
  it('takes text of up to the limit in characters, whatever its UTF-16 length', () => {
    expect(() => assertTextLimit('🎤'.repeat(6000), 10_000, 'text')).not.toThrow();
    expect(() => assertTextLimit('a'.repeat(10_000), 10_000, 'text')).not.toThrow();
  });

  it('refuses more with 413 text_too_long naming the field and the count', () => {
    let error: unknown;
    try {
      assertTextLimit('🎤'.repeat(10_001), 10_000, 'input');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).toBody().error).toEqual({
      type: 'invalid_request_error',
      code: 'text_too_long',
      param: 'input',
      message: "'input' has 10001 characters; the limit is 10000.",
    });
  });
});

describe('planChunks progress shares', () => {
  it('sum to the character count of the text, emoji included', () => {
    const text = 'Hello 🎤 world. '.repeat(200).trim();
    const chunks = planChunks(text, 1000);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.reduce((sum, c) => sum + c.chars, 0)).toBe(characterCount(text));
  });
});
