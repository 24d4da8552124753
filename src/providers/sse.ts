import { StringDecoder } from 'node:string_decoder';
import { UpstreamFailure } from './provider-adapter';

/** The longest SSE line, and the most `data:` one event may gather, in characters; over it the stream fails. */
export const SSE_LINE_CAP = 16 * 1024 * 1024;

const sizeText = (bytes: number): string =>
  bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;

/** An upstream answer over one of the caps: the provider's fault, so it fails over like any provider error. */
export const tooLarge = (what: string, cap: number): UpstreamFailure =>
  new UpstreamFailure({
    kind: 'provider_error',
    code: 'response_too_large',
    message: `upstream ${what} exceeds ${sizeText(cap)}`,
  });

export interface SseEvent {
  event: string;
  data: string;
}

/**
 * A synchronous server-sent events parser: `push` a chunk, get the events it completed (usually none or
 * one per network read), with no async iterator or promise per line. Events split across chunks,
 * CRLF / CR / LF line ends, `:` comments, multi-line `data:` joined by `\n`. A line, or an event's
 * gathered data, longer than `maxChars` throws `response_too_large`. `finish` returns the complete
 * lines of an event the server never closed with a blank line (lenient servers); an unterminated last
 * line is dropped (truncated).
 */
export class SseParser {
  // StringDecoder, not TextDecoder: a TextDecoder costs about a microsecond more per stream to make and use
  private readonly decoder = new StringDecoder('utf8');
  /** A byte-order mark is only dropped at the very start of the stream (as TextDecoder does). */
  private started = false;
  // the unterminated line so far, in pieces: only new text is scanned, so a long line costs O(n), not O(n²)
  private partial: string[] = [];
  private partialChars = 0;
  private dataChars = 0;
  private skipLeadingLf = false;
  private event = '';
  private data: string[] = [];

  constructor(private readonly maxChars = SSE_LINE_CAP) {}

  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLeadingLf && text.length > 0) {
      if (text.charCodeAt(0) === 10) text = text.slice(1);
      this.skipLeadingLf = false;
    }
    const events: SseEvent[] = [];
    const length = text.length;
    let start = 0;
    // the next LF and CR at or after `start`, found by indexOf (native) and looked for again only once passed
    let lf = text.indexOf('\n');
    let cr = text.indexOf('\r');
    for (;;) {
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      let at = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (at === -1) break;
      const code = text.charCodeAt(at);
      const piece = text.slice(start, at);
      if (this.partialChars + piece.length > this.maxChars) throw tooLarge('SSE line', this.maxChars);
      const line = this.partial.length > 0 ? this.partial.join('') + piece : piece;
      if (this.partial.length > 0) {
        this.partial = [];
        this.partialChars = 0;
      }
      if (code === 13) {
        if (at + 1 < length) {
          if (text.charCodeAt(at + 1) === 10) at++;
        } else this.skipLeadingLf = true; // a CR ending this chunk may be the first half of a CRLF split across chunks
      }
      start = at + 1;
      this.line(line, events);
    }
    if (start < length) {
      this.partialChars += length - start;
      if (this.partialChars > this.maxChars) throw tooLarge('SSE line', this.maxChars);
      this.partial.push(text.slice(start));
    }
    return events;
  }

  /** `finish` as a list (none or one event). */
  rest(): SseEvent[] {
    const last = this.finish();
    return last ? [last] : [];
  }

  finish(): SseEvent | undefined {
    if (this.data.length === 0) return undefined;
    const event = { event: this.event || 'message', data: this.data.join('\n') };
    this.data = [];
    return event;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0)
        events.push({
          event: this.event || 'message',
          data: this.data.length === 1 ? this.data[0] : this.data.join('\n'),
        });
      this.event = '';
      this.data = [];
      this.dataChars = 0;
      return;
    }
    // the common line first: `data: ...`
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      this.dataChars += value.length;
      if (this.dataChars > this.maxChars) throw tooLarge('SSE event', this.maxChars);
      this.data.push(value);
      return;
    }
    if (line.charCodeAt(0) === 58) return; // `:` comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.dataChars += value.length;
      if (this.dataChars > this.maxChars) throw tooLarge('SSE event', this.maxChars);
      this.data.push(value);
    } else if (field === 'event') this.event = value;
  }
}

/** Server-sent events from a byte stream (see SseParser). */
export async function* sseEvents(
  source: AsyncIterable<Uint8Array | string>,
  maxChars = SSE_LINE_CAP,
): AsyncGenerator<SseEvent> {
  const parser = new SseParser(maxChars);
  for await (const chunk of source) yield* parser.push(chunk);
  const last = parser.finish();
  if (last) yield last;
}
