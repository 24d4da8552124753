import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { CallAbort, type CallSignal } from '../common/call-signal';
import { UpstreamClient } from './http';
import type { UpstreamSocket } from './upstream-executor';
import { rawText, socketUrl } from './upstream-socket';

/** What the server does with a socket once upgraded; `refuse` answers the upgrade with a 401 instead. */
type Behaviour = (ws: WebSocket) => void;

describe("the executor's WebSocket (UpstreamClient.socket) against a real ws server", () => {
  let server: Server;
  let client: UpstreamClient;
  let base: string;
  let behaviour: Behaviour = () => undefined;
  let refuse = false;
  const upgrades: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const serverSockets: WebSocket[] = [];
  const heard: string[] = [];
  const raw = new Set<Socket>();

  beforeAll(async () => {
    const wss = new WebSocketServer({ noServer: true });
    server = createServer((_req, res) => res.writeHead(404).end());
    server.on('connection', (s) => (raw.add(s), s.once('close', () => raw.delete(s))));
    server.on('upgrade', (req, socket: Socket, head) => {
      upgrades.push({ url: req.url ?? '', headers: req.headers });
      if (refuse) {
        const body = JSON.stringify({
          error: { message: 'Incorrect API key provided.', type: 'invalid_request_error' },
        });
        return void socket.end(
          `HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        serverSockets.push(ws);
        ws.on('message', (data) => heard.push(rawText(data)));
        behaviour(ws);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
    client = new UpstreamClient(base);
  });
  afterEach(() => {
    behaviour = () => undefined;
    refuse = false;
    upgrades.length = 0;
    heard.length = 0;
    for (const ws of serverSockets.splice(0)) ws.terminate();
  });
  afterAll(async () => {
    await client.close(100);
    for (const s of raw) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const open = (signal: CallSignal = new AbortController().signal, idleMs = 2000): UpstreamSocket =>
    client.socket({
      path: '/realtime?model=a+b',
      headers: { authorization: 'Bearer sk-up' },
      signal,
      idleMs,
      closedCode: 'REALTIME_CLOSED',
    });
  const closedAtServer = (): Promise<void> =>
    waitFor(() => serverSockets.length > 0 && serverSockets[0].readyState === WebSocket.CLOSED);

  it('makes the base URL a ws(s) URL with the path and query', () => {
    expect(socketUrl('https://api.openai.com/v1', '/realtime?model=x')).toBe(
      'wss://api.openai.com/v1/realtime?model=x',
    );
    expect(socketUrl('http://127.0.0.1:4010/v1/', '/realtime?model=a+b')).toBe(
      'ws://127.0.0.1:4010/v1/realtime?model=a+b',
    );
  });

  it('upgrades with the headers and the trace headers, sends what was sent before the open, hands out messages in order', async () => {
    behaviour = (ws) => ws.on('message', (data) => ws.send(`echo ${rawText(data)}`));
    const traced = new CallAbort();
    traced.traceHeaders = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const socket = open(traced);
    socket.send('one');
    socket.send('two');
    await socket.opened;
    socket.send('three');
    expect([await socket.next(), await socket.next(), await socket.next()]).toEqual([
      'echo one',
      'echo two',
      'echo three',
    ]);
    expect(upgrades).toEqual([
      {
        url: '/v1/realtime?model=a+b',
        headers: expect.objectContaining({
          authorization: 'Bearer sk-up',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        }) as unknown,
      },
    ]);
    socket.close();
    await closedAtServer();
    expect(serverSockets[0].readyState).toBe(WebSocket.CLOSED);
  });

  it('sends no trace header for a signal of no attempt', async () => {
    const socket = open();
    await socket.opened;
    socket.close();
    expect(upgrades[0].headers.traceparent).toBeUndefined();
  });

  it('fails a refused upgrade as the HTTP status with the upstream message, on open and on next', async () => {
    refuse = true;
    const socket = open();
    const expected = { kind: 'http', status: 401, message: 'Incorrect API key provided.' };
    expect(await outcomeOf(() => socket.opened)).toMatchObject(expected);
    expect(await outcomeOf(() => socket.next())).toMatchObject(expected);
  });

  it('fails a refused connection as a connection failure', async () => {
    const dead = new UpstreamClient('http://127.0.0.1:1/v1');
    const socket = dead.socket({ path: '/x', headers: {}, signal: new AbortController().signal, idleMs: 2000 });
    expect(await outcomeOf(() => socket.opened)).toMatchObject({ kind: 'connection', code: 'ECONNREFUSED' });
    await dead.close(10);
  });

  it('hands out the messages before a close by the other side, then fails with the close code asked for', async () => {
    behaviour = (ws) => {
      ws.send('a');
      ws.send('b');
      ws.close(1011, 'going');
    };
    const socket = open();
    expect([await socket.next(), await socket.next()]).toEqual(['a', 'b']);
    expect(await outcomeOf(() => socket.next())).toMatchObject({ kind: 'connection', code: 'REALTIME_CLOSED' });
  });

  it('fails as STREAM_IDLE when the other side goes silent past the idle bound, and cuts the socket', async () => {
    behaviour = (ws) => ws.send('hello');
    const socket = open(undefined, 150);
    expect(await socket.next()).toBe('hello');
    const started = Date.now();
    expect(await outcomeOf(() => socket.next())).toMatchObject({ kind: 'connection', code: 'STREAM_IDLE' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await closedAtServer();
  });

  it('fails at once as the signal says (a cancel, a timeout), and cuts the socket', async () => {
    behaviour = (ws) => ws.send('queued');
    const controller = new AbortController();
    const socket = open(controller.signal);
    await socket.opened;
    await waitFor(() => serverSockets.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 20)); // 'queued' is in, unread
    controller.abort();
    expect(await outcomeOf(() => socket.next())).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    await closedAtServer();
    behaviour = () => undefined; // a server that says nothing: the step's timeout ends it
    const timedOut = open(AbortSignal.timeout(100));
    expect(await outcomeOf(async () => timedOut.next())).toEqual({ kind: 'timeout' });
  });

  it('stops reading while the consumer is behind, counts no silence then, and reads on when it caught up', async () => {
    const COUNT = 2000;
    const size = 16 * 1024;
    behaviour = (ws) => {
      for (let i = 0; i < COUNT; i++) ws.send(`${i}:`.padEnd(size, 'x'));
    };
    const socket = open(undefined, 150);
    await socket.opened;
    await new Promise((resolve) => setTimeout(resolve, 400)); // past the idle bound, nothing read
    // paused: most of the 32 MB is still in the server's buffers, not queued in the gateway
    expect(serverSockets[0].bufferedAmount).toBeGreaterThan(8 * 1024 * 1024);
    for (let i = 0; i < COUNT; i++) expect((await socket.next()).startsWith(`${i}:`)).toBe(true);
    expect(await outcomeOf(() => socket.next())).toMatchObject({ code: 'STREAM_IDLE' });
  });

  describe("within its key's share of the provider's sockets (decisions §11)", () => {
    let shared: UpstreamClient;
    beforeEach(() => (shared = new UpstreamClient(base, { connections: 2, keyShare: 0.5 })));
    afterEach(() => shared.close(0));

    const attempt = (tenant: string): CallAbort => Object.assign(new CallAbort(), { tenant });
    const openFor = (signal: CallAbort): UpstreamSocket =>
      shared.socket({ path: '/realtime', headers: {}, signal, idleMs: 2000 });

    it("connects a key's socket past its share only once its first ends, another key's at once", async () => {
      const first = openFor(attempt('a'));
      await first.opened;
      const queued = openFor(attempt('a'));
      const other = openFor(attempt('b'));
      await other.opened;
      expect(shared.shares.stats()).toEqual({ inUse: 2, waiting: 1 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(upgrades).toHaveLength(2);
      first.close();
      await queued.opened;
      expect(upgrades).toHaveLength(3);
      queued.close();
      other.close();
      expect(shared.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
    });

    it('gives the share back however a socket ends: refused, closed by the other side, cancelled, closed here', async () => {
      refuse = true;
      expect(await outcomeOf(() => openFor(attempt('a')).opened)).toMatchObject({ kind: 'http', status: 401 });
      refuse = false;
      behaviour = (ws) => ws.close(1011);
      expect(await outcomeOf(() => openFor(attempt('a')).next())).toMatchObject({ code: 'SOCKET_CLOSED' });
      behaviour = () => undefined;
      const cancelled = attempt('a');
      const socket = openFor(cancelled);
      await socket.opened;
      cancelled.abort(new Error('client gone'));
      expect(await outcomeOf(() => socket.next())).toMatchObject({ code: 'ABORTED' });
      const closedHere = openFor(attempt('a'));
      closedHere.close();
      expect(shared.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
      // the key still has its whole share: two sockets of it at once would not both open otherwise
      const again = openFor(attempt('a'));
      await again.opened;
      again.close();
    });

    it('fails a socket whose deadline passes while it waits as a local timeout, never having connected', async () => {
      const held = openFor(attempt('a'));
      await held.opened;
      const signal = attempt('a');
      const waiting = openFor(signal);
      const timeout = new Error('deadline');
      timeout.name = 'TimeoutError';
      signal.abort(timeout);
      expect(await outcomeOf(() => waiting.opened)).toEqual({ kind: 'timeout', local: true });
      held.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(upgrades).toHaveLength(1);
      expect(shared.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
    });

    it('closes the sockets still open once the grace of close() has passed', async () => {
      const socket = openFor(attempt('a'));
      await socket.opened;
      const started = Date.now();
      await shared.close(100);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(await outcomeOf(() => socket.next())).toMatchObject({ kind: 'connection', code: 'SOCKET_CLOSED' });
      await closedAtServer();
      expect(shared.shares.stats()).toEqual({ inUse: 0, waiting: 0 });
    });
  });
});

async function waitFor(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
