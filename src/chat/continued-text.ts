import type { ChatChunk } from '../providers/provider-adapter';

interface ChunkChoice {
  index?: unknown;
  delta?: { content?: unknown; tool_calls?: unknown; function_call?: unknown; [field: string]: unknown };
  finish_reason?: unknown;
  [field: string]: unknown;
}

const choicesOf = (chunk: ChatChunk): ChunkChoice[] | undefined =>
  Array.isArray(chunk.choices) ? (chunk.choices as ChunkChoice[]) : undefined;

/**
 * The text a chat stream delivered so far, seen as each chunk is written: the one cost a continuation puts on the
 * clean path (a few field reads and a push). `textOnly` turns false once the stream carried what a text continuation
 * cannot redo: tool-call deltas, or a choice other than the first.
 */
export class DeliveredText {
  textOnly = true;
  private readonly pieces: string[] = [];

  see(chunk: ChatChunk): void {
    const choices = choicesOf(chunk);
    if (choices === undefined || choices.length === 0) return;
    const choice = choices[0];
    if (choices.length > 1 || (choice.index !== undefined && choice.index !== 0)) this.textOnly = false;
    const delta = choice.delta;
    if (delta === undefined || delta === null) return;
    const content = delta.content;
    if (typeof content === 'string' && content.length > 0) this.pieces.push(content);
    if ((delta.tool_calls !== undefined && delta.tool_calls !== null) || delta.function_call !== undefined)
      this.textOnly = false;
  }

  /** Everything delivered, in one string. */
  get text(): string {
    if (this.pieces.length > 1) this.pieces.splice(0, this.pieces.length, this.pieces.join(''));
    return this.pieces[0] ?? '';
  }
}

/**
 * Text a continuing answer repeats before its new part: `strict` (a restart) must repeat all of it, character for
 * character; otherwise (the white space a prefill left out) it is swallowed as far as the answer repeats it.
 */
export interface Prefix {
  text: string;
  strict: boolean;
}

/** `chunk` whose first choice's delta says `content` instead (its role already went out with the first answer). */
function withContent(chunk: ChatChunk, choice: ChunkChoice, content: string): ChatChunk {
  const { role: _role, ...delta } = choice.delta ?? {};
  return { ...chunk, choices: [{ ...choice, delta: { ...delta, content } }] };
}

/**
 * Reads a continuing answer past `prefix` to its first chunk with something new (text past the prefix, a
 * `finish_reason`, usage), trimmed to the new part; its end when it ends after the prefix with nothing new. A string
 * says why it cannot continue the delivered text: it differs (cost bounded by the prefix's length), ends short, or
 * answers with tool calls or several choices.
 */
export async function readPast(
  rest: AsyncIterator<ChatChunk>,
  prefix: Prefix,
): Promise<IteratorResult<ChatChunk> | string> {
  const want = prefix.text.length;
  let matched = 0;
  let swallowing = want > 0;
  for (;;) {
    const next = await rest.next();
    const short = `its answer ended after repeating ${matched} of the ${want} characters delivered`;
    if (next.done) return swallowing && prefix.strict ? short : next;
    const chunk = next.value;
    const choices = choicesOf(chunk) ?? [];
    if (choices.length > 1) return 'it answered with several choices';
    const choice: ChunkChoice = choices[0] ?? {};
    const delta = choice.delta;
    if (delta && ((delta.tool_calls !== undefined && delta.tool_calls !== null) || delta.function_call !== undefined))
      return 'it answered with tool calls';
    const original = delta && typeof delta.content === 'string' ? delta.content : '';
    let content = original;
    if (swallowing && content.length > 0) {
      const n = Math.min(want - matched, content.length);
      let same = 0;
      while (same < n && content.charCodeAt(same) === prefix.text.charCodeAt(matched + same)) same++;
      if (same < n && prefix.strict) return `its answer differs from the delivered text at character ${matched + same}`;
      matched += same;
      content = content.slice(same);
      if (matched === want || same < n) swallowing = false;
    }
    const finished = typeof choice.finish_reason === 'string';
    if (swallowing && prefix.strict && finished) return short;
    if (content.length === 0 && !finished && !chunk.usage) continue;
    return { done: false, value: content === original ? chunk : withContent(chunk, choice, content) };
  }
}
