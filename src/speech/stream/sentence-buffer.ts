import { packSentences, splitSentences } from '../audio/sentences';

const PIECE_CHARS = 1000;
/** A sentence end: terminal punctuation followed by whitespace or by nothing yet. */
const SENTENCE_END = /[.!?…。！？;；\n](?=\s|$)/gu;

function lastSentenceEnd(text: string): number {
  let last = -1;
  for (const match of text.matchAll(SENTENCE_END)) last = match.index;
  return last;
}

/** Text arriving in pieces, released sentence by sentence so audio can start before the text ends. */
export class SentenceBuffer {
  private pending = '';

  push(text: string): string[] {
    this.pending += text;
    const end = lastSentenceEnd(this.pending);
    if (end < 0) return this.pending.length > PIECE_CHARS ? this.flush() : [];
    const complete = this.pending.slice(0, end + 1);
    this.pending = this.pending.slice(end + 1);
    return pieces(complete);
  }

  /** Everything left, sentence or not (task_finish). */
  flush(): string[] {
    const rest = this.pending;
    this.pending = '';
    return pieces(rest);
  }
}

const pieces = (text: string): string[] => (text.trim() ? packSentences(splitSentences(text, PIECE_CHARS), PIECE_CHARS) : []);
