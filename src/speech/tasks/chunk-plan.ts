import { splitSentences } from '../../audio/sentences';
import { characterCount } from '../speech-job';

/** Characters per synthesis call: about a minute of speech, small enough that an interruption loses little. */
export const TASK_CHUNK_CHARS = 1000;

/** One synthesis call of a task. */
export interface TaskChunk {
  text: string;
  /** Characters (code points) of the submitted text this chunk accounts for (whitespace between chunks included): they sum to the text's count. */
  chars: number;
}

/**
 * The text cut at sentence boundaries into chunks of at most `maxChars`, packed greedily like
 * packSentences; each chunk also knows its share of the original text, for progress reporting.
 */
export function planChunks(text: string, maxChars = TASK_CHUNK_CHARS): TaskChunk[] {
  const chunks: Array<{ text: string; end: number }> = [];
  let cursor = 0;
  for (const piece of splitSentences(text, maxChars)) {
    // pieces are trimmed slices of the text in order, so each is found at or after the last one's end
    const at = text.indexOf(piece, cursor);
    const end = at >= 0 ? at + piece.length : Math.min(text.length, cursor + piece.length);
    cursor = end;
    const last = chunks[chunks.length - 1];
    if (last && last.text.length + 1 + piece.length <= maxChars) {
      last.text += ` ${piece}`;
      last.end = end;
    } else {
      chunks.push({ text: piece, end });
    }
  }
  if (chunks.length > 0) chunks[chunks.length - 1].end = text.length;
  let start = 0;
  return chunks.map((chunk) => {
    const chars = chunk.end > start ? characterCount(text.slice(start, chunk.end)) : 0;
    start = Math.max(start, chunk.end);
    return { text: chunk.text, chars };
  });
}
