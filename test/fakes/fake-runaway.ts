import type { ServerResponse } from 'node:http';
import { FakeExchange, FakeUpstream } from './fake-upstream';

/**
 * How the runaway upstream misbehaves: a 2xx JSON reply of 50 MB, an SSE line that never ends (after one
 * complete chunk, or as the very first line), or one chunk (chat or pcm speech) and then silence.
 */
export type RunawayMode = 'hugeJson' | 'endlessLine' | 'endlessFirstLine' | 'stallAfterFirst';

export type FakeRunaway = FakeUpstream<RunawayMode> & {
  /** Bytes written by the answers so far: shows the gateway stopped reading. */
  bytesSent: number;
};

/** What the fake writes at most for one answer; a bound so a broken gateway cannot make it write for ever. */
export const RUNAWAY_LIMIT = 200 * 1024 * 1024;
export const HUGE_JSON_BYTES = 50 * 1024 * 1024;

const chunk = (content: string): string =>
  JSON.stringify({
    id: 'chatcmpl-runaway',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  });

/** An OpenAI-compatible upstream (chat, pcm speech) that never behaves: see `RunawayMode`. */
export async function startFakeRunaway(): Promise<FakeRunaway> {
  const pour = async (res: ServerResponse, piece: Buffer, limit: number): Promise<void> => {
    for (let sent = 0; sent < limit && !res.destroyed; sent += piece.length) {
      fake.bytesSent += piece.length;
      if (!res.write(piece)) await new Promise((resolve) => (res.once('drain', resolve), res.once('close', resolve)));
    }
  };
  const handler = async (x: FakeExchange<RunawayMode>): Promise<void> => {
    const { res, mode } = x;
    const filler = Buffer.alloc(64 * 1024, 'x');
    if (x.record.path === '/v1/audio/speech') {
      res.writeHead(200, { 'content-type': 'audio/pcm' });
      res.write(Buffer.alloc(4800)); // 0.1 s of 24 kHz silence, then nothing: the socket stays open
      return;
    }
    if (mode === 'hugeJson' && !x.record.stream) {
      // chunked, no Content-Length: only reading it shows its size
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"chatcmpl-runaway","object":"chat.completion","pad":"');
      await pour(res, filler, HUGE_JSON_BYTES);
      if (!res.destroyed) res.end('"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (mode !== 'endlessFirstLine') res.write(`data: ${chunk('Hello')}\n\n`);
    if (mode === 'stallAfterFirst') return;
    res.write('data: {"pad":"');
    await pour(res, filler, RUNAWAY_LIMIT);
  };
  const upstream = new FakeUpstream<RunawayMode>('hugeJson', handler);
  const fake: FakeRunaway = Object.assign(upstream, { bytesSent: 0 });
  return fake.listen('/v1');
}
