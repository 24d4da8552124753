import { packSentences, splitSentences } from '../../audio/sentences';

/** The most text one upstream call of a stream gets (sentences are packed up to this). */
export const PIECE_CHARS = 1000;

/**
 * The upstream calls one `task_continue` becomes: its own text, cut at sentence ends into pieces of
 * at most PIECE_CHARS. Nothing is held back for the next message (decisions §7: every
 * `task_continue` is answered by its own `task_continued` audio, as on MiniMax's own stream), so a
 * client that waits for the audio of each message before sending the next one is never left waiting.
 */
export function textPieces(text: string): string[] {
  return text.trim() ? packSentences(splitSentences(text, PIECE_CHARS), PIECE_CHARS) : [];
}
