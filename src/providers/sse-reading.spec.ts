import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../../test/support/loopback-server';
import { collectChunks, outcomeOf } from '../../test/support/upstream-outcome';
import { SseEvent, StreamStep } from './http';
import { UpstreamFailure } from './provider-adapter';

const translate = (event: SseEvent): StreamStep<string> => {
  if (event.data === '[DONE]') return 'end';
  if (event.data === 'skip') return undefined;
  if (event.data === 'bad') throw new UpstreamFailure({ kind: 'provider_error', code: 'stream_error' });
  return event.data;
};

const call = (signal = new AbortController().signal) => ({
  method: 'POST' as const,
  path: '/v1/chat/completions',
  headers: { 'content-type': 'application/json' },
  body: '{}',
  signal,
});

/** Writes each read as its own network write, a turn of the event loop apart, then ends (or not). */
function reads(res: ServerResponse, parts: string[], end = true): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const next = (i: number): void => {
    if (res.destroyed) return;
    if (i === parts.length) {
      if (end) res.end();
      return;
    }
    res.write(parts[i], () => setTimeout(() => next(i + 1), 5));
  };
  next(0);
}

describe('UpstreamClient.events: a server-sent-events answer through a dispatch handler', () => {
  it('hands out the chunks of every read in order, skips what the translator drops, and keeps the socket after the end marker', async () => {
    await withServer(
      (_req, res) =>
        reads(res, ['data: a\n\ndata: skip\n\ndata: b\n', '\ndata: c\n\ndata: [DONE]\n\n', 'data: late\n\n']),
      async (client, server) => {
        for (let i = 0; i < 3; i++) {
          const events = await client.events(call(), translate);
          expect(await collectChunks(events)).toEqual({ values: ['a', 'b', 'c'], error: null });
          expect(await events.next()).toEqual({ done: true, value: undefined });
          await sleep(50); // the rest of the body is drained, then the socket goes back to the pool
        }
        expect(server.connections()).toBe(1);
        expect(server.closedEarly()).toBe(0);
      },
    );
  });

  it('gives the chunks before a fault in the same read first, then the fault, and drops the socket', async () => {
    await withServer(
      (_req, res) => reads(res, ['data: a\n\ndata: b\n\ndata: bad\n\ndata: never\n\n', 'data: [DONE]\n\n'], false),
      async (client, server) => {
        const { values, error } = await collectChunks(await client.events(call(), translate));
        expect(values).toEqual(['a', 'b']);
        expect(error).toBeInstanceOf(UpstreamFailure);
        expect((error as UpstreamFailure).outcome).toMatchObject({ code: 'stream_error' });
        await waitFor(() => server.closedEarly() === 1);
      },
    );
  });

  it('fails a body that ends before its end marker as STREAM_TRUNCATED, after the chunks it had (an unclosed last event included)', async () => {
    await withServer(
      (_req, res) => reads(res, ['data: a\n\n', 'data: b\n']),
      async (client) => {
        const { values, error } = await collectChunks(await client.events(call(), translate));
        expect(values).toEqual(['a', 'b']);
        expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'connection', code: 'STREAM_TRUNCATED' });
      },
    );
  });

  it('ends a body that closes cleanly without the end marker as complete once `complete` says the answer is whole', async () => {
    await withServer(
      (_req, res) => reads(res, ['data: a\n\n', 'data: b\n\n']),
      async (client) => {
        let whole = false;
        const marking = (event: SseEvent): StreamStep<string> => {
          if (event.data === 'b') whole = true;
          return translate(event);
        };
        const events = await client.events(call(), marking, { complete: () => whole });
        expect(await collectChunks(events)).toEqual({ values: ['a', 'b'], error: null });
      },
    );
  });

  it('fails a stream whose connection is cut mid-way as a connection fault, after the chunks before it', async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: a\n\n', () => setTimeout(() => res.socket?.destroy(), 10));
      },
      async (client) => {
        const { values, error } = await collectChunks(await client.events(call(), translate));
        expect(values).toEqual(['a']);
        expect((error as UpstreamFailure).outcome.kind).toBe('connection');
      },
    );
  });

  it('drops the socket when the consumer stops before the end marker, and is done from then on', async () => {
    await withServer(
      (_req, res) => reads(res, ['data: a\n\ndata: b\n\n', 'data: c\n\n', 'data: [DONE]\n\n'], false),
      async (client, server) => {
        const events = await client.events(call(), translate);
        expect(await events.next()).toEqual({ done: false, value: 'a' });
        expect(await events.return!()).toEqual({ done: true, value: undefined });
        expect(await events.next()).toEqual({ done: true, value: undefined });
        await waitFor(() => server.closedEarly() === 1);
      },
    );
  });

  it("refuses a non-2xx answer with its status and the upstream's own message, before any chunk", async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'slow down' } }));
      },
      async (client) => {
        expect(await outcomeOf(() => client.events(call(), translate))).toEqual({
          kind: 'http',
          status: 429,
          message: 'slow down',
        });
      },
    );
  });

  it("carries a refused stream's Retry-After", async () => {
    await withServer(
      (_req, res) => res.writeHead(429, { 'retry-after': '2' }).end('{"error":{"message":"slow down"}}'),
      async (client) => {
        expect(await outcomeOf(() => client.events(call(), translate))).toEqual({
          kind: 'http',
          status: 429,
          message: 'slow down',
          retryAfterMs: 2000,
        });
      },
    );
  });

  it('ends with the signal: a cancel mid-stream fails the next read as ABORTED and drops the socket', async () => {
    await withServer(
      (_req, res) => reads(res, ['data: a\n\n', ...Array.from({ length: 50 }, () => 'data: more\n\n')], false),
      async (client, server) => {
        const controller = new AbortController();
        const events = await client.events(call(controller.signal), translate);
        expect(await events.next()).toEqual({ done: false, value: 'a' });
        controller.abort(new Error('the client left'));
        let outcome: unknown = null;
        try {
          for (let next = await events.next(); !next.done; next = await events.next());
        } catch (err) {
          outcome = (err as UpstreamFailure).outcome;
        }
        expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
        await waitFor(() => server.closedEarly() === 1);
      },
    );
  });

  it('fails a line over the cap as response_too_large', async () => {
    await withServer(
      (_req, res) => reads(res, [`data: ${'x'.repeat(5000)}\n\n`], false),
      async (client) => {
        const events = await client.events(call(), translate, { maxLineChars: 1000 });
        expect(await outcomeOf(() => events.next())).toMatchObject({ code: 'response_too_large' });
      },
    );
  });

  it('holds the upstream back while the reader does not take its chunks, and loses none', async () => {
    const count = 40000;
    const text = Array.from({ length: count }, (_, i) => `data: ${i} ${'p'.repeat(200)}\n\n`).join('');
    let serverDone = false;
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`${text}data: [DONE]\n\n`, () => (serverDone = true));
      },
      async (client) => {
        const events = await client.events(call(), translate);
        expect((await events.next()).value).toMatch(/^0 /);
        await sleep(300);
        // eight megabytes did not all come in while nobody read: the reads were paused
        expect(serverDone).toBe(false);
        const { values, error } = await collectChunks(events);
        expect(error).toBeNull();
        expect(values.length).toBe(count - 1);
        expect(values.every((v, i) => v.startsWith(`${i + 1} `))).toBe(true);
      },
    );
  });
});

describe('UpstreamClient.events with wholeJsonCap: a 2xx JSON answer in place of the stream', () => {
  /** Like MiniMax: the JSON reply is one event; a `fault` field fails it, `[DONE]` ends it, anything else is a chunk. */
  const translateReply = (event: SseEvent): StreamStep<string> => {
    if (event.data === '[DONE]') return 'end';
    const reply = JSON.parse(event.data) as { fault?: string; text?: string };
    if (reply.fault) throw new UpstreamFailure({ kind: 'provider_error', code: reply.fault });
    return reply.text;
  };
  const json =
    (text: string, headers: Record<string, string> = {}) =>
    (_req: unknown, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(text);
    };

  it('translates the whole body as one event and ends there (no end marker awaited), keeping the socket', async () => {
    await withServer(json('{"text":"the whole clip"}'), async (client, server) => {
      for (let i = 0; i < 3; i++) {
        const events = await client.events(call(), translateReply, { wholeJsonCap: 1000 });
        expect(await collectChunks(events)).toEqual({ values: ['the whole clip'], error: null });
        await sleep(20); // undici hands the socket back to the pool just after the body's end
      }
      expect(server.connections()).toBe(1);
      expect(server.closedEarly()).toBe(0);
    });
  });

  it("fails the first read with what the translator threw on the reply (MiniMax's base_resp error)", async () => {
    await withServer(json('{"fault":"1002"}'), async (client) => {
      const events = await client.events(call(), translateReply, { wholeJsonCap: 1000 });
      expect(await outcomeOf(() => events.next())).toEqual({ kind: 'provider_error', code: '1002' });
      expect(await events.next()).toEqual({ done: true, value: undefined });
    });
  });

  it('reads the reply whole even when it comes in several reads', async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"te', () => setTimeout(() => res.end('xt":"late half"}'), 20));
      },
      async (client) => {
        const events = await client.events(call(), translateReply, { wholeJsonCap: 1000 });
        expect(await collectChunks(events)).toEqual({ values: ['late half'], error: null });
      },
    );
  });

  it('fails a reply over the cap as response_too_large, declared or read, and drops the socket', async () => {
    const big = `{"text":"${'x'.repeat(5000)}"}`;
    for (const declared of [true, false]) {
      await withServer(
        (_req, res) => {
          res.writeHead(200, {
            'content-type': 'application/json',
            ...(declared ? { 'content-length': String(big.length) } : {}),
          });
          res.write(big.slice(0, 2000), () => setTimeout(() => res.end(big.slice(2000)), 20));
        },
        async (client, server) => {
          const events = await client.events(call(), translateReply, { wholeJsonCap: 1000 });
          expect(await outcomeOf(() => events.next())).toMatchObject({ code: 'response_too_large' });
          await waitFor(() => server.closedEarly() === 1);
        },
      );
    }
  });

  it('cuts the connection when the consumer leaves, or the signal fires, before the reply is all read', async () => {
    const halfReply = (_req: unknown, res: ServerResponse): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"text":');
    };
    await withServer(halfReply, async (client, server) => {
      const events = await client.events(call(), translateReply, { wholeJsonCap: 1000 });
      expect(await events.return!()).toEqual({ done: true, value: undefined });
      await waitFor(() => server.closedEarly() === 1);
    });
    await withServer(halfReply, async (client, server) => {
      const controller = new AbortController();
      const events = await client.events(call(controller.signal), translateReply, { wholeJsonCap: 1000 });
      const reading = outcomeOf(() => events.next());
      controller.abort(new Error('the client left'));
      expect(await reading).toMatchObject({ kind: 'connection', code: 'ABORTED' });
      await waitFor(() => server.closedEarly() === 1);
    });
  });

  it('parses a JSON-typed body as events without wholeJsonCap (the option is what turns the mode on)', async () => {
    await withServer(json('data: a\n\ndata: [DONE]\n\n'), async (client) => {
      expect(await collectChunks(await client.events(call(), translate))).toEqual({ values: ['a'], error: null });
    });
  });
});

async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(10);
  }
}
