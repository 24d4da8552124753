import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import type { EnvironmentVariables } from '../config/env.schema';
import { DESTINATION_NOT_ALLOWED } from './webhook-url';
import { guardedLookup, WebhookSender } from './webhook-sender';

type Answer = { status: number; body?: string; location?: string };

describe('WebhookSender', () => {
  let server: Server;
  let port: number;
  const seen: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  let answer: Answer = { status: 200 };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        seen.push({ headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
        res.writeHead(answer.status, answer.location ? { location: answer.location } : {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
    answer = { status: 200 };
  });

  const sender = (allowPrivate: boolean): WebhookSender =>
    new WebhookSender({ SVC_WEBHOOK_ALLOW_PRIVATE: allowPrivate } as EnvironmentVariables);

  it('posts the exact body with the signed headers and reports success', async () => {
    const s = sender(true);
    const result = await s.send(`http://localhost:${port}/hook`, 'failover', 'whsec_x', '{"id":"evt_1"}');
    await s.onApplicationShutdown();
    expect(result).toMatchObject({ delivered: true, statusCode: 200, error: null });
    expect(result.errorType).toBeUndefined();
    expect(seen[0].body).toBe('{"id":"evt_1"}');
    expect(seen[0].headers).toMatchObject({
      'content-type': 'application/json',
      'x-svc-event': 'failover',
      'x-svc-signature': expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
    });
  });

  it('refuses a hostname that resolves to loopback, and a literal private address, without connecting', async () => {
    const s = sender(false);
    const byName = await s.send(`http://localhost:${port}/hook`, 'failover', 'whsec_x', '{}');
    const byLiteral = await s.send(`http://127.0.0.1:${port}/hook`, 'failover', 'whsec_x', '{}');
    await s.onApplicationShutdown();
    // one message for both, naming neither the address a name resolved to nor its range
    expect(byName).toMatchObject({ delivered: false, statusCode: null, error: DESTINATION_NOT_ALLOWED });
    expect(byLiteral).toMatchObject({ delivered: false, statusCode: null, error: DESTINATION_NOT_ALLOWED });
    // the span's error.type (decisions §12): one kind for both, no address either
    expect([byName.errorType, byLiteral.errorType]).toEqual(['destination_not_allowed', 'destination_not_allowed']);
    expect(byName.error).not.toMatch(/127\.0\.0\.1|::1|loopback/);
    expect(seen).toHaveLength(0);
  });

  it('refuses ports below 1024 other than 80 and 443 unless private destinations are allowed', async () => {
    const s = sender(false);
    const ssh = await s.send('http://93.184.216.34:22/hook', 'failover', 'whsec_x', '{}');
    await s.onApplicationShutdown();
    expect(ssh).toMatchObject({
      delivered: false,
      statusCode: null,
      latencyMs: expect.any(Number),
      error: DESTINATION_NOT_ALLOWED,
    });
    expect(seen).toHaveLength(0);
  });

  it('does not follow a redirect and keeps at most 2 KiB of the answer', async () => {
    const s = sender(true);
    answer = { status: 302, location: 'http://169.254.169.254/' };
    const redirected = await s.send(`http://127.0.0.1:${port}/`, 'failover', 'whsec_x', '{}');
    answer = { status: 500, body: 'e'.repeat(100_000) };
    const failed = await s.send(`http://127.0.0.1:${port}/`, 'failover', 'whsec_x', '{}');
    await s.onApplicationShutdown();
    expect(redirected).toMatchObject({
      delivered: false,
      statusCode: 302,
      error: 'HTTP 302 (redirects are not followed)',
    });
    expect(failed).toMatchObject({ delivered: false, statusCode: 500, error: 'HTTP 500', errorType: '500' });
    expect(redirected.errorType).toBe('302');
    expect(failed.snippet).toHaveLength(2048);
    expect(seen).toHaveLength(2);
  });

  it('keeps a snippet PostgreSQL can store when the answer holds NUL bytes (UTF-16)', async () => {
    const s = sender(true);
    answer = { status: 200, body: 'O\0K\0' };
    const utf16 = await s.send(`http://127.0.0.1:${port}/`, 'failover', 'whsec_x', '{}');
    await s.onApplicationShutdown();
    expect(utf16).toMatchObject({ delivered: true, statusCode: 200, error: null, snippet: 'O\uFFFDK\uFFFD' });
  });

  it('reports a refused connection in plain words', async () => {
    const s = sender(true);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await s.send(`http://127.0.0.1:${freePort}/`, 'failover', 'whsec_x', '{}');
    await s.onApplicationShutdown();
    expect(result).toMatchObject({
      delivered: false,
      statusCode: null,
      error: 'connection refused',
      errorType: 'ECONNREFUSED',
    });
  });
});

describe('guardedLookup', () => {
  const resolverOf =
    (answers: LookupAddress[]) =>
    (
      _host: string,
      _options: object,
      callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
    ): void =>
      callback(null, answers);

  it('refuses a host when any of its addresses is private', (done) => {
    const lookup = guardedLookup(
      false,
      resolverOf([
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ]),
    );
    lookup('mixed.example', { all: true }, (err) => {
      expect(err?.message).toBe(DESTINATION_NOT_ALLOWED);
      expect(err).toMatchObject({ address: '10.0.0.7', range: 'private' });
      done();
    });
  });

  it('refuses a name that does not resolve with the same message as a private one, unless private destinations are allowed', (done) => {
    const notFound = (
      _host: string,
      _options: object,
      callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
    ): void => callback(Object.assign(new Error('getaddrinfo ENOTFOUND missing.example'), { code: 'ENOTFOUND' }), []);
    guardedLookup(false, notFound)('missing.example', { all: true }, (err) => {
      expect(err?.message).toBe(DESTINATION_NOT_ALLOWED);
      expect(err?.message).toContain('SVC_WEBHOOK_ALLOW_PRIVATE');
      guardedLookup(true, notFound)('missing.example', { all: true }, (open) => {
        expect(open).toMatchObject({ code: 'ENOTFOUND' });
        done();
      });
    });
  });

  it('answers in the shape the caller asked for', (done) => {
    const lookup = guardedLookup(false, resolverOf([{ address: '93.184.216.34', family: 4 }]));
    lookup('public.example', {}, (err, address, family) => {
      expect(err).toBeNull();
      expect([address, family]).toEqual(['93.184.216.34', 4]);
      done();
    });
  });

  it('is the resolution the connection really uses: a name no DNS knows reaches the address it returned', async () => {
    const server = createServer((_req, res) => res.end('pinned'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent({
      connect: { lookup: guardedLookup(true, resolverOf([{ address: '127.0.0.1', family: 4 }])) },
    });
    const res = await request(`http://pinned.invalid:${port}/`, { dispatcher: agent });
    expect(await res.body.text()).toBe('pinned');
    await agent.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
