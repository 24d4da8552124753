import { Agent, request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { startApp, TestApp } from './support/app';

const MiB = 1024 * 1024;
const CHAT = '/v1/chat/completions';
/** A query string sends the same request through Express (body-parser) instead of the chat fast path. */
const VIA_EXPRESS = `${CHAT}?via=express`;

interface Answer {
  status: number;
  body: { provider?: string; error?: { code: string; type: string } };
  requestId: string | undefined;
}

const GOOD = JSON.stringify({ model: 'echo-1', messages: [{ role: 'user', content: 'hi' }] });

/**
 * The chat fast path reads plain UTF-8 JSON bodies itself (raw-body) and hands every other body to
 * body-parser: either way a body is accepted, limited and refused exactly as on the Express routes.
 */
describe('chat completion request bodies', () => {
  let t: TestApp;
  let secret: string;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  /** One request on the shared keep-alive socket; `body` as an array is sent chunked, piece by piece. */
  const send = (
    path: string,
    headers: Record<string, string>,
    body: string | Buffer | Array<string | Buffer>,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const url = new URL(path, t.url);
      const chunked = Array.isArray(body);
      const req = httpRequest(url, {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${secret}`,
          ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          ...headers,
        },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            body: text ? (JSON.parse(text) as Answer['body']) : {},
            requestId: res.headers['x-svc-request-id'] as string | undefined,
          });
        });
      });
      if (chunked) for (const piece of body) req.write(piece);
      req.end(chunked ? undefined : body);
    });

  /** The same request through the fast path and through Express: both answers, which must agree. */
  const both = async (
    headers: Record<string, string>,
    body: string | Buffer | Array<string | Buffer>,
  ): Promise<Answer> => {
    const fast = await send(CHAT, headers, body);
    const express = await send(VIA_EXPRESS, headers, body);
    expect({ status: express.status, code: express.body.error?.code }).toEqual({
      status: fast.status,
      code: fast.body.error?.code,
    });
    expect(fast.requestId).toMatch(/^req_/);
    return fast;
  };

  beforeAll(async () => {
    t = await startApp();
    ({ secret } = await t.createKey('bodies'));
  });
  afterAll(async () => {
    agent.destroy();
    await t?.close();
  });

  it.each([
    ['no charset', 'application/json'],
    ['charset=utf-8', 'application/json; charset=utf-8'],
    ['a quoted upper-case charset', 'application/json;charset="UTF-8"'],
  ])('accepts JSON with %s', async (_what, type) => {
    const answer = await both({ 'content-type': type }, GOOD);
    expect(answer.status).toBe(200);
    expect(answer.body.provider).toBe('echo');
  });

  it('accepts a body that starts with a byte order mark or whitespace', async () => {
    expect((await both({ 'content-type': 'application/json' }, `\uFEFF${GOOD}`)).status).toBe(200);
    expect((await both({ 'content-type': 'application/json' }, ` \r\n\t${GOOD}`)).status).toBe(200);
  });

  it('accepts a chunked body (no Content-Length) and a gzip-encoded one', async () => {
    expect((await both({ 'content-type': 'application/json' }, [GOOD.slice(0, 10), GOOD.slice(10)])).status).toBe(200);
    expect(
      (await both({ 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(GOOD))).status,
    ).toBe(200);
  });

  it.each([
    ['malformed JSON', '{"model": "echo-1",', 400, 'invalid_json'],
    ['a JSON string instead of an object', '"hello"', 400, 'invalid_json'],
    ['a JSON number', '42', 400, 'invalid_json'],
    ['a JSON array', '[]', 400, 'invalid_value'],
  ])('refuses %s', async (_what, body, status, code) => {
    const answer = await both({ 'content-type': 'application/json' }, body);
    expect(answer.status).toBe(status);
    expect(answer.body.error).toMatchObject({ code, type: 'invalid_request_error' });
  });

  it('refuses a body over 1 MiB, declared or chunked, and the connection serves the next request', async () => {
    const big = JSON.stringify({ model: 'echo-1', messages: [{ role: 'user', content: 'x'.repeat(MiB) }] });
    const declared = await both({ 'content-type': 'application/json' }, big);
    expect(declared.status).toBe(413);
    expect(declared.body.error?.code).toBe('body_too_large');
    const chunked = await both({ 'content-type': 'application/json' }, [big.slice(0, MiB / 2), big.slice(MiB / 2)]);
    expect(chunked.status).toBe(413);
    // the same keep-alive socket (maxSockets 1) goes on serving
    expect((await send(CHAT, { 'content-type': 'application/json' }, GOOD)).status).toBe(200);
  });

  it('refuses a charset other than UTF-8 and an unknown content encoding with 415', async () => {
    const latin1 = await both({ 'content-type': 'application/json; charset=latin1' }, GOOD);
    expect(latin1.status).toBe(415);
    expect(latin1.body.error?.code).toBe('unsupported_media_type');
    const compress = await both({ 'content-type': 'application/json', 'content-encoding': 'compress' }, GOOD);
    expect(compress.status).toBe(415);
    expect(compress.body.error?.code).toBe('unsupported_media_type');
  });
});
