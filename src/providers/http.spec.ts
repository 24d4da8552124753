import { classify } from '../failover/chain';
import { UpstreamFailure } from './provider-adapter';
import { abortFailure, readCapped, sseEvents, SseEvent, toUpstreamFailure, upstreamErrorMessage } from './http';

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
