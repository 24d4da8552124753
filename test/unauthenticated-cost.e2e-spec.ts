import { connect, Socket } from 'node:net';
import { startApp, TestApp } from './support/app';

/** What came back on a raw connection, and whether the server closed it. */
interface RawExchange {
  response: string;
  closedByServer: boolean;
  elapsedMs: number;
}

/**
 * Sends only a request head announcing a body of `length` bytes (the body itself is never sent) and
 * collects what the server answers within `waitMs`.
 */
function headOnly(url: string, head: string, waitMs: number): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(Number(port), hostname, () => socket.write(head));
    let response = '';
    let settled = false;
    const finish = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ response, closedByServer, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk) => (response += chunk.toString('latin1')));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', reject);
  });
}

const MIB = 1024 * 1024;
const headOf = (path: string, type: string, authorization?: string): string =>
  [
    `POST ${path} HTTP/1.1`,
    'Host: gateway',
    `Content-Type: ${type}`,
    `Content-Length: ${MIB}`,
    ...(authorization ? [`Authorization: ${authorization}`] : []),
    '',
    '',
  ].join('\r\n');

describe('unauthenticated cost', () => {
  let t: TestApp;
  let secret: string;

  beforeAll(async () => {
    t = await startApp({ env: { SVC_HTTP_HEADERS_TIMEOUT_MS: '1000', SVC_HTTP_MAX_CONNECTIONS: '20' } });
    secret = (await t.createKey('unauthenticated cost')).secret;
  });
  afterAll(async () => {
    await t.close();
    delete process.env.SVC_HTTP_HEADERS_TIMEOUT_MS;
    delete process.env.SVC_HTTP_MAX_CONNECTIONS;
  });

  it.each([
    ['chat (fast path)', '/v1/chat/completions', 'application/json'],
    ['speech (Express)', '/v1/audio/speech', 'application/json'],
    ['admin keys', '/v1/admin/keys', 'application/json'],
    ['consent upload (multipart)', '/v1/audio/voice_consents', 'multipart/form-data; boundary=x'],
    ['a body of another type', '/v1/audio/speech', 'text/plain'],
    // Express routes paths case-insensitively: the upper-case spelling reaches the same route
    ['speech, upper-case /V1/', '/V1/audio/speech', 'application/json'],
    ['chat, upper-case /V1/ (Express, not the fast path)', '/V1/Chat/Completions', 'application/json'],
    ['admin keys, upper-case', '/V1/ADMIN/keys', 'application/json'],
    ['a path no route has', '/no/such/route', 'application/json'],
    ['a path under /v1 no route has', '/v1/no-such-route', 'application/json'],
    ['a public route (it takes no body)', '/healthz', 'application/json'],
  ])(
    'answers a 1 MiB %s request with no or a wrong key 401 before any body byte is sent, and closes',
    async (_, path, type) => {
      for (const authorization of [undefined, 'Bearer sk-svc-made-up-0000000000000000000000000000']) {
        const exchange = await headOnly(t.url, headOf(path, type, authorization), 5000);
        expect(exchange.response).toMatch(/^HTTP\/1\.1 401 /);
        expect(exchange.response).toMatch(/"type":"authentication_error"/);
        expect(exchange.response).toMatch(/\r\nconnection: close\r\n/i);
        expect(exchange.closedByServer).toBe(true);
        expect(exchange.elapsedMs).toBeLessThan(2000);
      }
    },
  );

  it('waits for the body of a request whose key is valid (the 401 above is the key check, not an early answer to everything)', async () => {
    const exchange = await headOnly(t.url, headOf('/v1/chat/completions', 'application/json', `Bearer ${secret}`), 700);
    expect(exchange.response).toBe('');
    expect(exchange.closedByServer).toBe(false);
  });

  it('keeps public routes without a body open to requests without a key', async () => {
    expect((await t.http.get('/healthz')).status).toBe(200);
    expect((await t.http.get('/V1/t2a_v2/audio/not-a-link.mp3')).status).toBe(404);
    expect((await t.http.get('/v1/t2a_v2/audio/not-a-link.mp3')).status).toBe(404);
  });

  it('drops a client that trickles its request head past the headers deadline', async () => {
    const { hostname, port } = new URL(t.url);
    const started = Date.now();
    const closedAfter = await new Promise<number>((resolve) => {
      const socket = connect(Number(port), hostname, () =>
        socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\n'),
      );
      const drip = setInterval(() => socket.writable && socket.write('X'), 2000);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(drip);
        resolve(Date.now() - started);
      });
      socket.resume();
    });
    // deadline 1 s, checked by Node every 30 s
    expect(closedAfter).toBeLessThan(35_000);
  }, 45_000);

  it('refuses connections over SVC_HTTP_MAX_CONNECTIONS at once', async () => {
    const { hostname, port } = new URL(t.url);
    const open: Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const socket = connect(Number(port), hostname);
        socket.on('error', () => undefined);
        await new Promise((resolve) => socket.once('connect', resolve));
        open.push(socket);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      const extra = await headOnly(t.url, 'GET /healthz HTTP/1.1\r\nHost: g\r\n\r\n', 3000);
      expect(extra.closedByServer).toBe(true);
      expect(extra.response).toBe('');
    } finally {
      for (const socket of open) socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await t.http.get('/healthz')).status).toBe(200);
  });
});
