/**
 * One chat chunk as a server-sent `data:` event, cheaply. An adapter that parsed the chunk from the
 * upstream's JSON text keeps that text on the chunk (`withRawJson`); framing then appends the
 * `provider` field to the text instead of copying the object and serialising it again. Any chunk
 * without usable text (none kept, a line break in it, a `provider` field of its own, not an object)
 * is serialised as `{ ...chunk, provider }`, as before.
 */

/** The upstream's JSON text of a parsed chunk (an own symbol property: JSON.stringify skips it). */
export const RAW_JSON: unique symbol = Symbol('rawJson');

type WithRaw = { [RAW_JSON]?: string };

/** Keeps `text` (the JSON `chunk` was parsed from, unchanged since) on `chunk`; returns `chunk`. */
export function withRawJson<T extends object>(chunk: T, text: string): T {
  (chunk as WithRaw)[RAW_JSON] = text;
  return chunk;
}

/** Whether `raw` is one JSON object on one line, with no top-level `provider` it could clash with. */
function appendable(raw: string): boolean {
  return (
    raw.charCodeAt(0) === 123 && // {
    raw.charCodeAt(raw.length - 1) === 125 && // }
    !raw.includes('\n') &&
    !raw.includes('\r') &&
    !raw.includes('"provider"')
  );
}

/** `data: <chunk with provider>\n\n`, as `data: ${JSON.stringify({ ...chunk, provider })}\n\n` would say it. */
export function sseChunkFrame(chunk: object, provider: string): string {
  const raw = (chunk as WithRaw)[RAW_JSON];
  if (typeof raw === 'string' && appendable(raw)) {
    const inner = raw.slice(1, -1);
    const field = `"provider":${JSON.stringify(provider)}`;
    return inner.trim() === '' ? `data: {${field}}\n\n` : `data: {${inner},${field}}\n\n`;
  }
  return `data: ${JSON.stringify({ ...chunk, provider })}\n\n`;
}
