import type { ServerResponse } from 'node:http';
import { FakeExchange, FakeUpstream, sendJson } from './fake-upstream';

/**
 * How the firehose answers a chat (per model, `setMode(mode, {model})`): `ok` a short, whole answer (JSON or a
 * stream); `firehose` a valid stream of large chunks poured as fast as the reader takes them (until
 * FIREHOSE_LIMIT); `drip` a valid small chunk (stream) or a few bytes of JSON every DRIP_MS, for ever, always
 * under any idle timeout. Speech (`/audio/speech`, pcm): `drip` sends 0.1 s of silence every DRIP_MS, for ever.
 */
export type FirehoseMode = 'ok' | 'firehose' | 'drip';

export type FakeFirehose = FakeUpstream<FirehoseMode> & {
  /** Answers being written now (a request whose connection is still open and whose answer is not finished). */
  open: number;
};

/** What one firehose answer writes at most: a bound so a broken gateway cannot make it write for ever. */
export const FIREHOSE_LIMIT = 256 * 1024 * 1024;
export const DRIP_MS = 200;

const chunk = (content: string, finish: string | null = null): string =>
  JSON.stringify({
    id: 'chatcmpl-firehose',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  });

const completion = (content: string): Record<string, unknown> => ({
  id: 'chatcmpl-firehose',
  object: 'chat.completion',
  created: 1700000000,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

/** Resolves once the socket takes more (true) or the connection is gone (false). */
const drained = (res: ServerResponse): Promise<boolean> =>
  new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    res.once('drain', done);
    res.once('close', done);
  });

/** An OpenAI-compatible chat and pcm speech upstream whose answers are poured, trickled or short (`FirehoseMode`). */
export async function startFakeFirehose(): Promise<FakeFirehose> {
  const handler = async (x: FakeExchange<FirehoseMode>): Promise<void> => {
    const { res, mode, record } = x;
    fake.open += 1;
    res.once('close', () => (fake.open -= 1));
    if (record.path === '/v1/audio/speech') {
      res.writeHead(200, { 'content-type': 'audio/pcm' });
      if (mode !== 'drip') return void res.end(Buffer.alloc(4800));
      do res.write(Buffer.alloc(4800));
      while (await x.wait(DRIP_MS));
      return;
    }
    if (mode === 'ok') {
      if (!record.stream) return sendJson(res, 200, completion('pong'));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${chunk('pong', 'stop')}\n\ndata: [DONE]\n\n`);
      return;
    }
    if (mode === 'drip' && !record.stream) {
      // a JSON body that never ends: a space every DRIP_MS (valid JSON whitespace)
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id":"chatcmpl-drip",');
      do res.write(' ');
      while (await x.wait(DRIP_MS));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (mode === 'drip') {
      do res.write(`data: ${chunk('.')}\n\n`);
      while (await x.wait(DRIP_MS));
      return;
    }
    const piece = Buffer.from(`data: ${chunk('x'.repeat(32 * 1024))}\n\n`);
    for (let sent = 0; sent < FIREHOSE_LIMIT && !res.destroyed; sent += piece.length) {
      if (!res.write(piece) && !(await drained(res))) return;
    }
    res.end('data: [DONE]\n\n');
  };
  const upstream = new FakeUpstream<FirehoseMode>('ok', handler);
  const fake: FakeFirehose = Object.assign(upstream, { open: 0 });
  return fake.listen('/v1');
}
