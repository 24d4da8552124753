import { setTimeout as sleep } from 'node:timers/promises';
import { type Handler, pour, serve } from '../../test/support/loopback-server';
import { classify } from '../failover/chain';
import { UpstreamFailure } from './provider-adapter';
import { sseEvents, SseEvent, toUpstreamFailure, UpstreamClient } from './http';

const outcomeOf = async (work: Promise<unknown>): Promise<unknown> => {
  const err = await work.then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamFailure);
  return (err as UpstreamFailure).outcome;
};

const call = (signal = new AbortController().signal) => ({
  method: 'POST' as const,
  path: '/',
  headers: {},
  body: '{}',
  signal,
});

describe('UpstreamClient.json: the JSON reply cap', () => {
  it('stops reading a chunked body at the cap and fails as response_too_large, cutting the upstream', async () => {
    let sent = 0;
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      void pour(res, Buffer.alloc(64 * 1024, 0x20), 50 * 1024 * 1024).then((n) => ((sent = n), res.end()));
    });
    const client = new UpstreamClient(server.url);
    try {
      const outcome = await outcomeOf(client.json(call(), 1024 * 1024));
      expect(outcome).toEqual({
        kind: 'provider_error',
        code: 'response_too_large',
        message: 'upstream JSON reply exceeds 1 MiB',
      });
      expect(classify(outcome as UpstreamFailure['outcome'])).toMatchObject({ verdict: 'next', breakerFailure: true });
      await sleep(100);
      expect(server.closedEarly()).toBe(1);
      expect(sent).toBeLessThan(50 * 1024 * 1024);
    } finally {
      await client.close(0);
      await server.close();
    }
  });

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 50 * 1024 * 1024 });
      res.write('{"a":');
    });
    const client = new UpstreamClient(server.url);
    try {
      expect(await outcomeOf(client.json(call(), 1024 * 1024))).toMatchObject({ code: 'response_too_large' });
    } finally {
      await client.close(0);
      await server.close();
    }
  });

  it('reads a reply at the cap', async () => {
    const text = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 - 10) });
    const server = await serve((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(text));
    const client = new UpstreamClient(server.url);
    try {
      expect(Buffer.byteLength(text)).toBe(1024 * 1024);
      expect((await client.json(call(), 1024 * 1024)).pad).toHaveLength(1024 * 1024 - 10);
    } finally {
      await client.close(0);
      await server.close();
    }
  });
});

describe('UpstreamClient.text: a reply read through a dispatch handler', () => {
  const withServer = async (
    handler: Handler,
    body: (client: UpstreamClient, closedEarly: () => number) => Promise<void>,
  ): Promise<void> => {
    const server = await serve(handler);
    const client = new UpstreamClient(server.url);
    try {
      await body(client, server.closedEarly);
    } finally {
      await client.close(0);
      await server.close();
    }
  };

  it('reads a 2xx body sent in many chunks, and the calls after it reuse the socket', async () => {
    const sockets = new Set<unknown>();
    await withServer(
      (req, res) => {
        sockets.add(req.socket);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"a":');
        setImmediate(() => res.end('"é"}'));
      },
      async (client) => {
        for (let i = 0; i < 5; i++) {
          expect(await client.text(call())).toBe('{"a":"é"}');
          await sleep(5); // the connection goes back to the pool just after the answer's end
        }
        expect(sockets.size).toBe(1);
      },
    );
  });

  it("fails a non-2xx answer with its status and the upstream's own message", async () => {
    await withServer(
      (_req, res) =>
        res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}'),
      async (client) => {
        expect(await outcomeOf(client.text(call()))).toEqual({ kind: 'http', status: 429, message: 'slow down' });
      },
    );
  });

  it("carries a refusal's Retry-After, the first of two", async () => {
    await withServer(
      (_req, res) => {
        res.setHeader('retry-after', ['7', '30']);
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"busy"}}');
      },
      async (client) => {
        expect(await outcomeOf(client.text(call()))).toEqual({
          kind: 'http',
          status: 503,
          message: 'busy',
          retryAfterMs: 7000,
        });
      },
    );
  });

  it('keeps only the start of a long error body and drops its socket', async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        void pour(res, Buffer.alloc(16 * 1024, 0x61), 8 * 1024 * 1024).then(() => res.end());
      },
      async (client, closedEarly) => {
        const outcome = (await outcomeOf(client.text(call()))) as { status: number; message: string };
        expect(outcome.status).toBe(500);
        expect(outcome.message).toBe('a'.repeat(1000));
        await sleep(100);
        expect(closedEarly()).toBe(1);
      },
    );
  });

  it("takes the message of a JSON error body cut at the cap (OpenAI's huge 400s)", async () => {
    await withServer(
      (_req, res) =>
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'x'.repeat(200_000), type: 'invalid_request_error' } })),
      async (client) => {
        const outcome = (await outcomeOf(client.text(call()))) as { status: number; message: string };
        expect(outcome.status).toBe(400);
        expect(outcome.message).toBe('x'.repeat(1000));
      },
    );
  });

  it('cancels a call whose signal fires while the body is coming, as the reason says', async () => {
    const abort = new AbortController();
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"a":');
        setTimeout(() => abort.abort(new UpstreamFailure({ kind: 'timeout' })), 20);
      },
      async (client) => {
        expect(await outcomeOf(client.text(call(abort.signal)))).toEqual({ kind: 'timeout' });
      },
    );
  });

  it('does not send a call whose signal fired before it', async () => {
    let received = 0;
    const abort = new AbortController();
    abort.abort();
    await withServer(
      (_req, res) => {
        received++;
        res.end('{}');
      },
      async (client) => {
        expect(await outcomeOf(client.text(call(abort.signal)))).toMatchObject({ kind: 'connection', code: 'ABORTED' });
        await sleep(50);
        expect(received).toBe(0);
      },
    );
  });

  it('fails a body the upstream cuts off as a connection fault', async () => {
    await withServer(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"a":');
        setTimeout(() => res.socket?.destroy(), 20);
      },
      async (client) => {
        expect(await outcomeOf(client.text(call()))).toMatchObject({ kind: 'connection' });
      },
    );
  });
});

describe('the stream idle timeout', () => {
  const readers: Array<[string, (client: UpstreamClient, signal: AbortSignal) => Promise<AsyncIterator<string>>]> = [
    ['UpstreamClient.events (chat)', (client, signal) => client.events(call(signal), (event: SseEvent) => event.data)],
    [
      'UpstreamClient.events with wholeJsonCap (MiniMax speech)',
      (client, signal) => client.events(call(signal), (event: SseEvent) => event.data, { wholeJsonCap: 1000 }),
    ],
  ];

  it.each(readers)(
    'fails a stream that goes silent after its first event, as STREAM_IDLE, within the bound (%s)',
    async (_name, open) => {
      const server = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
      });
      const client = new UpstreamClient(server.url, { streamIdleTimeoutMs: 300 });
      try {
        const events = await open(client, new AbortController().signal);
        expect(await events.next()).toEqual({ done: false, value: 'first' });
        const started = Date.now();
        const outcome = await outcomeOf(events.next());
        expect(outcome).toMatchObject({ kind: 'connection', code: 'STREAM_IDLE' });
        expect(Date.now() - started).toBeLessThan(3000);
        expect(classify(outcome as UpstreamFailure['outcome']).breakerFailure).toBe(true);
      } finally {
        await client.close(0);
        await server.close();
      }
    },
  );

  it('does not count a reader that holds the body back (back-pressure) as upstream silence', async () => {
    const size = 8 * 1024 * 1024;
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      void pour(res, Buffer.alloc(64 * 1024, 1), size).then(() => res.end());
    });
    const client = new UpstreamClient(server.url, { streamIdleTimeoutMs: 300 });
    try {
      let received = 0;
      for await (const chunk of await client.relay(call())) {
        // the first read waits well past the idle bound while the upstream is blocked on our full buffers
        if (received === 0) await sleep(1000);
        received += chunk.length;
      }
      expect(received).toBe(size);
    } finally {
      await client.close(0);
      await server.close();
    }
  });

  it("maps undici's body timeout to STREAM_IDLE and its headers timeout to a timeout", () => {
    expect(
      toUpstreamFailure(Object.assign(new Error('Body Timeout Error'), { code: 'UND_ERR_BODY_TIMEOUT' })).outcome,
    ).toMatchObject({ kind: 'connection', code: 'STREAM_IDLE' });
    expect(
      toUpstreamFailure(Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' })).outcome,
    ).toEqual({ kind: 'timeout' });
  });
});

describe('sseEvents: the line cap', () => {
  async function* chunks(...texts: string[]): AsyncGenerator<string> {
    for (const text of texts) yield await Promise.resolve(text);
  }
  async function* endless(first: string, piece: string): AsyncGenerator<string> {
    yield first;
    for (let i = 0; i < 1e6; i++) yield await Promise.resolve(piece);
  }

  it('fails an unterminated line once it passes the cap, without waiting for its end', async () => {
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of sseEvents(endless('data: one\n\ndata: ', 'x'.repeat(1000)), 100000))
        seen.push(event.data);
    })();
    expect(await outcomeOf(reading)).toEqual({
      kind: 'provider_error',
      code: 'response_too_large',
      message: 'upstream SSE line exceeds 100000 bytes',
    });
    expect(seen).toEqual(['one']);
  });

  it('fails a line that arrives whole in one chunk over the cap', async () => {
    const reading = (async () => {
      for await (const event of sseEvents(chunks(`data: ${'y'.repeat(2000)}\n\n`), 1000)) void event;
    })();
    expect(await outcomeOf(reading)).toMatchObject({ code: 'response_too_large' });
  });

  it('fails an event whose many short data lines add up past the cap', async () => {
    const reading = (async () => {
      for await (const event of sseEvents(endless('', `data: ${'z'.repeat(100)}\n`), 10000)) void event;
    })();
    expect(await outcomeOf(reading)).toEqual({
      kind: 'provider_error',
      code: 'response_too_large',
      message: 'upstream SSE event exceeds 10000 bytes',
    });
  });

  it('keeps lines and events up to the cap', async () => {
    const events: string[] = [];
    for await (const event of sseEvents(chunks(`data: ${'a'.repeat(994)}\n`, 'data: b\n\n'), 1000))
      events.push(event.data);
    expect(events.map((e) => e.length)).toEqual([996]);
  });
});
