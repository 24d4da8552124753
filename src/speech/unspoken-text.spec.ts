import { SLOW_CHARS_PER_SECOND, unspokenText } from './unspoken-text';

describe('unspokenText', () => {
  const text = 'One two three. Four five six seven. Eight nine.';

  it('is the whole text when nothing was heard', () => {
    expect(unspokenText(text, 0, 1)).toBe(text);
  });

  it('starts at the sentence being spoken, never later', () => {
    // 'One two three.' and its space: 15 characters, at the slow rate 1.5 s
    const first = 15 / SLOW_CHARS_PER_SECOND;
    expect(unspokenText(text, first - 0.01, 1)).toBe(text);
    expect(unspokenText(text, first, 1)).toBe('Four five six seven. Eight nine.');
    expect(unspokenText(text, first + 0.5, 1)).toBe('Four five six seven. Eight nine.');
  });

  it('keeps the last sentence however long the audio ran', () => {
    expect(unspokenText(text, 600, 1)).toBe('Eight nine.');
  });

  it('reads a faster voice further along', () => {
    expect(unspokenText(text, 15 / SLOW_CHARS_PER_SECOND / 2, 2)).toBe('Four five six seven. Eight nine.');
  });
});
