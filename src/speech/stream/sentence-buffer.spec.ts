import { SentenceBuffer } from './sentence-buffer';

describe('SentenceBuffer', () => {
  it('holds text until a sentence ends, then releases the complete sentences', () => {
    const buffer = new SentenceBuffer();
    expect(buffer.push('Hello there')).toEqual([]);
    expect(buffer.push(', friend. How are')).toEqual(['Hello there, friend.']);
    expect(buffer.push(' you? I am')).toEqual(['How are you?']);
    expect(buffer.flush()).toEqual(['I am']);
    expect(buffer.flush()).toEqual([]);
  });

  it('does not split at a dot inside a number or an abbreviation without a following space', () => {
    const buffer = new SentenceBuffer();
    expect(buffer.push('It costs 3.50 dollars')).toEqual([]);
    expect(buffer.push(' today.')).toEqual(['It costs 3.50 dollars today.']);
  });

  it('releases a long run-on text without waiting for punctuation forever', () => {
    const buffer = new SentenceBuffer();
    const released = buffer.push('word '.repeat(300));
    expect(released.length).toBeGreaterThan(0);
    expect(released.join(' ').split(/\s+/).filter(Boolean)).toHaveLength(300);
  });

  it('loses no words across many small pushes', () => {
    const buffer = new SentenceBuffer();
    const text = 'One two. Three four! Five six? Seven';
    const out = [...text].flatMap((ch) => buffer.push(ch)).concat(buffer.flush());
    expect(out.join(' ').replace(/\s+/g, ' ')).toBe(text);
  });
});
