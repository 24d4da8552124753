import { splitSentences } from '../audio/sentences';

/**
 * Characters a voice speaks per second at speed 1, taken low on purpose: the sentence a break fell in is found
 * from the audio already heard, and an estimate that runs behind repeats a little, one that runs ahead would
 * skip text. Speech engines read English at about 14 to 16 characters a second.
 */
export const SLOW_CHARS_PER_SECOND = 10;

/** Longest sentence looked at (as the stream's pieces are cut). */
const SENTENCE_CHARS = 1000;

/**
 * The text still to speak after `heardSeconds` of `text`'s audio (decisions §7, speech that does not break): from
 * the start of the sentence that was being spoken, so at most that sentence is heard twice and nothing is skipped.
 */
export function unspokenText(text: string, heardSeconds: number, speed: number): string {
  const sentences = splitSentences(text, SENTENCE_CHARS);
  let reached = Math.max(0, heardSeconds) * SLOW_CHARS_PER_SECOND * speed;
  let first = 0;
  // whole sentences the audio has certainly passed (the space between two counts as one character)
  while (first < sentences.length - 1 && reached >= sentences[first].length + 1) {
    reached -= sentences[first].length + 1;
    first += 1;
  }
  return sentences.slice(first).join(' ');
}
