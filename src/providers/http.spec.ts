import { createServer } from 'node:net';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../../test/support/loopback-server';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { classify } from '../failover/chain';
import { UpstreamFailure } from './provider-adapter';
import {
  abortFailure,
  readCapped,
  sseEvents,
  SseEvent,
  toUpstreamFailure,
  UpstreamClient,
  upstreamErrorMessage,
} from './http';
import type { UpstreamCall } from './upstream-executor';

async function collect(chunks: (string | Uint8Array)[]): Promise<SseEvent[]> {
  async function* source(): AsyncGenerator<string | Uint8Array> {
    for (const chunk of chunks) yield await Promise.resolve(chunk);
  }
  const events: SseEvent[] = [];
  for await (const event of sseEvents(source())) events.push(event);
  return events;
}

describe('sseEvents', () => {
  it('reassembles events split anywhere across chunks', async () => {
    const events = await collect(['da', 'ta: {"a"', ':1}\n', '\ndata: [DO', 'NE]\n\n']);
    expect(events).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it('accepts CRLF, lone CR and LF line ends, including a CRLF split between chunks', async () => {
    const events = await collect(['data: one\r', '\n\r\ndata: two\r\rdata: three\n\n']);
    expect(events.map((e) => e.data)).toEqual(['one', 'two', 'three']);
  });

  it('skips comments and joins multi-line data with newlines', async () => {
    const events = await collect([': keep-alive\n\n', 'event: delta\ndata: first\ndata:second\nid: 7\n\n']);
    expect(events).toEqual([{ event: 'delta', data: 'first\nsecond' }]);
  });

  it('decodes a multi-byte character split between chunks', async () => {
    const bytes = Buffer.from('data: héllo ✓\n\n');
    const events = await collect([bytes.subarray(0, 8), bytes.subarray(8, 15), bytes.subarray(15)]);
    expect(events).toEqual([{ event: 'message', data: 'héllo ✓' }]);
  });

  it('reads a long line that arrives in many chunks in linear time', async () => {
    const line = 'x'.repeat(8 * 1024 * 1024);
    const chunks = ['data: ', ...(line.match(/.{1,16384}/g) ?? []), '\n\ndata: [DONE]\n\n'];
    const started = Date.now();
    const events = await collect(chunks);
    expect(events.map((e) => e.data.length)).toEqual([line.length, 6]);
    // rescanning the carried-over tail for line ends on every chunk took seconds here
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('drops an unterminated last line as truncated but keeps complete lines of an unclosed event', async () => {
    expect(await collect(['data: {"cut":'])).toEqual([]);
    expect(await collect(['data: [DONE]\n'])).toEqual([{ event: 'message', data: '[DONE]' }]);
  });
});

describe('upstreamErrorMessage', () => {
  it("takes the message of OpenAI's and Anthropic's error bodies", () => {
    expect(
      upstreamErrorMessage('{"error":{"message":"Invalid value for messages","type":"invalid_request_error"}}'),
    ).toBe('Invalid value for messages');
    expect(upstreamErrorMessage('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).toBe(
      'Overloaded',
    );
    expect(upstreamErrorMessage('{"detail":"Not Found"}')).toBe('Not Found');
  });

  it('keeps short plain text and ignores HTML error pages and empty bodies', () => {
    expect(upstreamErrorMessage('upstream connect error\n')).toBe('upstream connect error');
    expect(upstreamErrorMessage('<html><body>502 Bad Gateway</body></html>')).toBeUndefined();
    expect(upstreamErrorMessage('')).toBeUndefined();
  });
});

describe('readCapped', () => {
  it('stops reading at the cap', async () => {
    async function* body(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 100; i++) yield await Promise.resolve(Buffer.alloc(1000, 'x'));
    }
    expect(await readCapped(body(), 2500)).toHaveLength(2500);
  });
});

describe('toUpstreamFailure', () => {
  it("treats the signal's TimeoutError as a timeout outcome", () => {
    const signal = AbortSignal.abort(new DOMException('The operation timed out.', 'TimeoutError'));
    expect(toUpstreamFailure(new Error('aborted'), signal).outcome).toEqual({ kind: 'timeout' });
  });

  it('treats a plain abort as a cancelled connection', () => {
    const controller = new AbortController();
    controller.abort();
    expect(toUpstreamFailure(new Error('aborted'), controller.signal).outcome).toEqual({
      kind: 'connection',
      code: 'ABORTED',
      message: 'request cancelled',
    });
  });

  it('passes through an UpstreamFailure the core used as the abort reason', () => {
    const reason = new UpstreamFailure({ kind: 'timeout' });
    expect(abortFailure(reason)).toBe(reason);
  });

  it('keeps the OS error code of a transport error for the failover reason', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const failure = toUpstreamFailure(err);
    expect(failure.outcome).toMatchObject({ kind: 'connection', code: 'ECONNREFUSED' });
    expect(classify(failure.outcome).reason).toBe('connection refused (ECONNREFUSED)');
  });

  it("maps undici's own header and body timeouts to timeouts", () => {
    const err = Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(toUpstreamFailure(err).outcome).toEqual({ kind: 'timeout' });
  });
});

// The transport's own rules, once, against real loopback servers: the adapters' specs script the executor instead.

/** A JSON POST, or a GET with no body, as the probes send it. */
const post = (
  signal: AbortSignal = new AbortController().signal,
  method: UpstreamCall['method'] = 'POST',
): UpstreamCall =>
  method === 'GET'
    ? { method, path: '/v1/x', headers: {}, signal }
    : { method, path: '/v1/x', headers: { 'content-type': 'application/json' }, body: '{}', signal };
/** Every operation of the executor, each read to its end, by name. */
const operations: Array<[string, (client: UpstreamClient, signal?: AbortSignal) => Promise<unknown>]> = [
  ['text', (client, signal) => client.text(post(signal))],
  ['json', (client, signal) => client.json(post(signal))],
  [
    'events',
    async (client, signal) => {
      for await (const _ of await client.events(post(signal), (e: SseEvent) => (e.data === '[DONE]' ? 'end' : e.data)));
    },
  ],
  [
    'relay',
    async (client, signal) => {
      for await (const _ of await client.relay(post(signal)));
    },
  ],
  ['check', (client, signal) => client.check(post(signal, 'GET'))],
];

async function waitFor(condition: () => boolean, ms = 2000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(10);
  }
}

describe("UpstreamClient: a call's signal and its connection", () => {
  it.each(operations)(
    'fails a call the upstream never answers as a timeout when its timeout fires, and cuts it (%s)',
    async (_name, run) => {
      await withServer(
        () => undefined, // no answer at all
        async (client, server) => {
          const started = Date.now();
          expect(await outcomeOf(() => run(client, AbortSignal.timeout(150)))).toEqual({ kind: 'timeout' });
          expect(Date.now() - started).toBeLessThan(1500);
          await waitFor(() => server.closedEarly() === 1);
        },
      );
    },
  );

  it.each(operations)(
    'fails a call its client cancels (a plain abort) as ABORTED, not a timeout (%s)',
    async (_n, run) => {
      await withServer(
        () => undefined,
        async (client) => {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), 50);
          expect(await outcomeOf(() => run(client, controller.signal))).toMatchObject({
            kind: 'connection',
            code: 'ABORTED',
          });
        },
      );
    },
  );

  it.each(operations)(
    'fails a refused connection as a connection outcome the core fails over on (%s)',
    async (_n, run) => {
      // a port that was just free: nothing listens there
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port: free } = probe.address() as { port: number };
          probe.close(() => resolve(free));
        });
      });
      const client = new UpstreamClient(`http://127.0.0.1:${port}`);
      try {
        const outcome = await outcomeOf(() => run(client));
        expect(outcome).toMatchObject({ kind: 'connection', code: 'ECONNREFUSED' });
        expect(classify(outcome).verdict).toBe('next');
      } finally {
        await client.close(0);
      }
    },
  );

  it.each(operations)(
    "fails a non-2xx with its status, the upstream's message and error fields (%s)",
    async (_n, run) => {
      await withServer(
        (_req, res) =>
          res.writeHead(503, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              error: {
                message: 'Refused by policy.',
                type: 'invalid_request_error',
                code: 'policy',
                param: 'messages',
              },
            }),
          ),
        async (client) => {
          expect(await outcomeOf(() => run(client))).toEqual({
            kind: 'http',
            status: 503,
            message: 'Refused by policy.',
            error: { type: 'invalid_request_error', code: 'policy', param: 'messages' },
          });
        },
      );
    },
  );
});

describe('UpstreamClient.json: what the reply must be', () => {
  it('fails a reply that is not JSON, or not a JSON object, as invalid_response', async () => {
    for (const text of ['<html>oops</html>', '[1, 2]']) {
      await withServer(
        (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(text),
        async (client) => {
          expect(await outcomeOf(() => client.json(post()))).toMatchObject({
            kind: 'provider_error',
            code: 'invalid_response',
          });
        },
      );
    }
  });
});

/** A body written in `count` pieces `gapMs` apart (stopping when the client leaves); `cut` destroys the socket after the first. */
function pieces(res: ServerResponse, count: number, gapMs: number, sent: { n: number }, cut = false): void {
  res.writeHead(200, { 'content-type': 'audio/pcm' });
  const next = (): void => {
    if (res.destroyed) return;
    if (sent.n === count) return void res.end();
    res.write(Buffer.alloc(1000, sent.n), () => {
      sent.n++;
      if (cut) return void res.socket?.destroy();
      setTimeout(next, gapMs);
    });
  };
  next();
}

describe('UpstreamClient.relay: a 2xx body as its chunks', () => {
  it('hands out the chunks as they come, before the body is all sent, and keeps the socket after the end', async () => {
    const sent = { n: 0 };
    await withServer(
      (_req, res) => pieces(res, 4, 200, sent),
      async (client, server) => {
        const chunks = (await client.relay(post()))[Symbol.asyncIterator]();
        expect((await chunks.next()).value).toEqual(Buffer.alloc(1000, 0));
        expect(sent.n).toBeLessThan(4);
        let bytes = 1000;
        for (let next = await chunks.next(); !next.done; next = await chunks.next()) bytes += next.value.length;
        expect(bytes).toBe(4000);
        sent.n = 0;
        await sleep(20); // the connection goes back to the pool just after the body's end
        for await (const _ of await client.relay(post()));
        expect(server.connections()).toBe(1);
      },
    );
  });

  it('fails the read after a cut connection as a connection fault', async () => {
    await withServer(
      (_req, res) => pieces(res, 4, 10, { n: 0 }, true),
      async (client) => {
        const seen: Buffer[] = [];
        const outcome = await outcomeOf(async () => {
          for await (const chunk of await client.relay(post())) seen.push(chunk);
        });
        expect(outcome.kind).toBe('connection');
        expect(seen.length).toBeGreaterThanOrEqual(1);
      },
    );
  });

  it('fails the next read as ABORTED when the signal fires mid-body, and closes the upstream', async () => {
    const sent = { n: 0 };
    await withServer(
      (_req, res) => pieces(res, 20, 100, sent),
      async (client, server) => {
        const controller = new AbortController();
        const outcome = await outcomeOf(async () => {
          for await (const _ of await client.relay(post(controller.signal))) controller.abort();
        });
        expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
        await waitFor(() => server.closedEarly() === 1);
        expect(sent.n).toBeLessThan(20);
      },
    );
  });

  it('closes the upstream when the consumer stops reading', async () => {
    await withServer(
      (_req, res) => pieces(res, 20, 100, { n: 0 }),
      async (client, server) => {
        for await (const _ of await client.relay(post())) break;
        await waitFor(() => server.closedEarly() === 1);
      },
    );
  });
});

describe('UpstreamClient.check: a 2xx whose body does not matter', () => {
  it('drains the body so the socket is reused', async () => {
    await withServer(
      (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}'),
      async (client, server) => {
        for (let i = 0; i < 3; i++) {
          await client.check(post(undefined, 'GET'));
          await sleep(5);
        }
        expect(server.connections()).toBe(1);
        expect(server.closedEarly()).toBe(0);
      },
    );
  });
});
