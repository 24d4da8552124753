import { PIECE_CHARS, textPieces } from './text-pieces';

describe('textPieces', () => {
  it('speaks a message without a sentence end at once, as it is', () => {
    expect(textPieces('Hello there')).toEqual(['Hello there']);
  });

  it('keeps short sentences of one message together in one piece', () => {
    expect(textPieces('One two. Three four! Five')).toEqual(['One two. Three four! Five']);
  });

  it('cuts a long message at sentence ends into pieces of at most PIECE_CHARS, losing no word', () => {
    const sentence = 'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more. ';
    const text = sentence.repeat(40);
    const pieces = textPieces(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(PIECE_CHARS);
    expect(pieces.join(' ').split(/\s+/).filter(Boolean)).toEqual(text.split(/\s+/).filter(Boolean));
  });

  it('cuts a long run-on message without punctuation too', () => {
    const pieces = textPieces('word '.repeat(300));
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join(' ').split(/\s+/).filter(Boolean)).toHaveLength(300);
  });

  it('has nothing to speak in whitespace', () => {
    expect(textPieces(' \n\t ')).toEqual([]);
  });
});
