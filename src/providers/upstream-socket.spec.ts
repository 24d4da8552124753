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
    client = new UpstreamClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`);
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
});

async function waitFor(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
