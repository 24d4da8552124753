import { packSentences, splitSentences } from './sentences';

/** Everything but whitespace, in order: what the splitter may not lose. */
const letters = (text: string): string => text.replace(/\s/g, '');

describe('splitSentences', () => {
  it('splits at . ! ? and … followed by a space, keeping the marks', () => {
    expect(splitSentences('Hello there. How are you? Fine! Well… maybe.', 100)).toEqual([
      'Hello there.',
      'How are you?',
      'Fine!',
      'Well…',
      'maybe.',
    ]);
  });

  it('keeps decimals, dotted names and runs of marks inside one sentence', () => {
    expect(splitSentences('Pi is 3.14 on example.com, really?! Yes...', 100)).toEqual([
      'Pi is 3.14 on example.com, really?!',
      'Yes...',
    ]);
  });

  it('keeps a closing quote or bracket with the sentence it ends', () => {
    expect(splitSentences('He said "stop." Then (quietly.) left.', 100)).toEqual([
      'He said "stop."',
      'Then (quietly.)',
      'left.',
    ]);
  });

  it('splits CJK text at 。！？ without needing spaces', () => {
    expect(splitSentences('你好。今天天气很好！你去吗？好」', 100)).toEqual([
      '你好。',
      '今天天气很好！',
      '你去吗？',
      '好」',
    ]);
  });

  it('treats newlines as boundaries and drops blank lines', () => {
    expect(splitSentences('First line\r\n\n  Second line  \nthird', 100)).toEqual([
      'First line',
      'Second line',
      'third',
    ]);
  });

  it('breaks a long sentence after its last comma that fits', () => {
    const pieces = splitSentences('one two three, four five six, seven eight nine ten', 30);
    expect(pieces).toEqual(['one two three, four five six,', 'seven eight nine ten']);
  });

  it('falls back to spaces, then to a hard cut, when there is no comma', () => {
    expect(splitSentences('aaaa bbbb cccc dddd', 10)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitSentences('abcdefghijklmnopqrstuvwxyz', 10)).toEqual(['abcdefghij', 'klmnopqrst', 'uvwxyz']);
  });

  it('never cuts an emoji (surrogate pair) in half', () => {
    const pieces = splitSentences('abcd😀efgh', 5);
    expect(pieces).toEqual(['abcd', '😀efg', 'h']);
    expect(pieces.join('')).toBe('abcd😀efgh');
  });

  it('returns nothing for whitespace-only text', () => {
    expect(splitSentences(' \n\t ', 10)).toEqual([]);
  });

  it.each([7, 20, 64])('never exceeds %i characters and loses no characters on a long mixed text', (max) => {
    const text =
      'The gateway speaks offline. It resamples, encodes, and streams — all without a network! ' +
      '第一句话。第二句话很长很长很长很长很长很长很长很长很长很长很长很长，还有逗号。\n' +
      'Numbers like 3.5 and 10,000 stay intact? Supercalifragilisticexpialidocious-is-a-very-long-word.';
    const pieces = splitSentences(text, max);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(max);
      expect(piece).toBe(piece.trim());
      expect(piece.length).toBeGreaterThan(0);
    }
    expect(letters(pieces.join(''))).toBe(letters(text));
  });

  it('rejects a maximum too small to make progress', () => {
    expect(() => splitSentences('abc', 1)).toThrow(RangeError);
  });
});

describe('packSentences', () => {
  it('joins consecutive sentences while they fit, in order', () => {
    expect(packSentences(['One.', 'Two.', 'Three.', 'Four.'], 10)).toEqual(['One. Two.', 'Three.', 'Four.']);
  });
});
