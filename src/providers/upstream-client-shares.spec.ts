import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallAbort } from '../common/call-signal';
import { UpstreamClient } from './http';
import { UpstreamFailure } from './provider-adapter';

/** A server whose answer is chosen by path: JSON, a 500, a whole SSE stream, a stream that never ends, pcm. */
function startServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/v1/json') return void res.end('{"ok":true}');
    if (req.url === '/v1/error') return void res.writeHead(500).end('{"error":{"message":"boom"}}');
    if (req.url === '/v1/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end('data: one\n\ndata: [DONE]\n\n');
    }
    if (req.url === '/v1/endless') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.write('data: one\n\n');
    }
    res.writeHead(200, { 'content-type': 'audio/pcm' });
    res.end(Buffer.alloc(4800));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

const attempt = (tenant: string): CallAbort => Object.assign(new CallAbort(), { tenant });
const call = (path: string, signal: CallAbort) => ({ method: 'POST' as const, path, headers: {}, signal });
const translate = (event: { data: string }) => (event.data === '[DONE]' ? ('end' as const) : event.data);

describe('UpstreamClient socket shares', () => {
  let server: Server;
  let url: string;
  let client: UpstreamClient;

  beforeAll(async () => ({ server, url } = await startServer()));
  beforeEach(() => (client = new UpstreamClient(url, { connections: 2, keyShare: 0.5 })));
  afterEach(() => client.close(0));
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('gives the socket back however a call ends', async () => {
    await client.text(call('/json', attempt('a')));
    await expect(client.text(call('/error', attempt('a')))).rejects.toBeInstanceOf(UpstreamFailure);
    const whole = await client.events(call('/sse', attempt('a')), translate);
    for await (const event of whole) expect(event).toBe('one');
    const left = await client.events(call('/endless', attempt('a')), translate);
    await left.next();
    await left.return?.();
    const cancelled = attempt('a');
    const endless = await client.events(call('/endless', cancelled), translate);
    await endless.next();
    cancelled.abort(new Error('client gone'));
    await expect(endless.next()).rejects.toBeInstanceOf(UpstreamFailure);
    for await (const chunk of await client.relay(call('/pcm', attempt('a')))) expect(chunk.length).toBeGreaterThan(0);
    const leftAudio = await client.relay(call('/pcm', attempt('a')));
    for await (const _chunk of leftAudio) break;
    await new Promise((resolve) => setImmediate(resolve));
    expect(client.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
  });

  it("runs a key's calls past its share one after another, another key's at once", async () => {
    const held = await client.events(call('/endless', attempt('a')), translate);
    const queued = client.text(call('/json', attempt('a')));
    expect(client.shares.stats()).toEqual({ inUse: 1, waiting: 1 });
    await expect(client.text(call('/json', attempt('b')))).resolves.toBe('{"ok":true}');
    await held.return?.();
    await expect(queued).resolves.toBe('{"ok":true}');
  });

  it('refuses a call whose deadline passes while it waits as a local timeout, and notes the wait', async () => {
    const held = await client.events(call('/endless', attempt('a')), translate);
    const signal = attempt('a');
    const queued = client.text(call('/json', signal));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(signal.socketWaitMs(Date.now())).toBeGreaterThanOrEqual(40);
    const timeout = new Error('deadline');
    timeout.name = 'TimeoutError';
    signal.abort(timeout);
    await expect(queued).rejects.toMatchObject({ outcome: { kind: 'timeout', local: true } });
    await held.return?.();
    expect(client.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
  });
});
