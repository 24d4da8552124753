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
 * Server-sent events from a byte stream: events split across chunks, CRLF / CR / LF line ends,
 * `:` comments, multi-line `data:` joined by `\n`. An unterminated last line is dropped (truncated).
 * A line, or an event's gathered data, longer than `maxChars` throws `response_too_large`.
 */
export async function* sseEvents(
  source: AsyncIterable<Uint8Array | string>,
  maxChars = SSE_LINE_CAP,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  const lineEnd = /\r\n|\r|\n/g;
  // the unterminated line so far, in pieces: only new text is scanned, so a long line costs O(n), not O(n²)
  let partial: string[] = [];
  let partialChars = 0;
  let dataChars = 0;
  let skipLeadingLf = false;
  let event = '';
  let data: string[] = [];
  for await (const chunk of source) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (skipLeadingLf && text.length > 0) {
      if (text.startsWith('\n')) text = text.slice(1);
      skipLeadingLf = false;
    }
    let start = 0;
    lineEnd.lastIndex = 0;
    for (let match = lineEnd.exec(text); match; match = lineEnd.exec(text)) {
      const piece = text.slice(start, match.index);
      if (partialChars + piece.length > maxChars) throw tooLarge('SSE line', maxChars);
      const line = partial.length > 0 ? partial.join('') + piece : piece;
      partial = [];
      partialChars = 0;
      start = lineEnd.lastIndex;
      // a CR ending this chunk may be the first half of a CRLF split across chunks
      if (match[0] === '\r' && start === text.length) skipLeadingLf = true;
      if (line === '') {
        if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        dataChars = 0;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') {
        dataChars += value.length;
        if (dataChars > maxChars) throw tooLarge('SSE event', maxChars);
        data.push(value);
      } else if (field === 'event') event = value;
    }
    if (start < text.length) {
      partialChars += text.length - start;
      if (partialChars > maxChars) throw tooLarge('SSE line', maxChars);
      partial.push(text.slice(start));
    }
  }
  // complete lines of an event the server never closed with a blank line still count (lenient servers)
  if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
}
