import OpenAI, { APIError, BadRequestError, InternalServerError } from 'openai';
import type { ContinuationMode } from '../src/config/continuation';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, modelsSent, ProviderPool, REQUEST_ID, servedAlert } from './support/failover';

const messages = [{ role: 'user' as const, content: 'Say hello.' }];

/** The official `openai` SDK, unchanged, as a client of the failover chain. */
describe('chat completion failover through the openai SDK', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('fo-sdk', 20);
    t = await startApp({ gateway: pool.gateway });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const clientFor = async (label: string, continuation?: ContinuationMode[]) => {
    const [a, b] = pool.take(2);
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b', ...(continuation ? { continuation } : {}) },
    ]);
    const client = new OpenAI({ apiKey: key.secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
    return { a, b, client };
  };

  it('returns a completion and the failover headers through withResponse()', async () => {
    const { a, b, client } = await clientFor('sdk failover');
    a.fake.setMode('error500', { status: 503 });

    const { data, response, request_id } = await client.chat.completions
      .create({ model: 'm-a', messages })
      .withResponse();

    // the SDK's own request id accessors name this gateway's request
    expect(request_id).toMatch(REQUEST_ID);
    expect(request_id).toBe(response.headers.get('x-svc-request-id'));
    expect((data as { _request_id?: string | null })._request_id).toBe(request_id);
    expect(data.choices[0].message.content).toBe(b.fake.replyFor('m-b'));
    expect(data.model).toBe('m-b');
    expect((data as unknown as { provider: string }).provider).toBe(b.name);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(response.headers.get('x-svc-is-fallback')).toBe('true');
    expect(response.headers.get('x-svc-fallback-level')).toBe('1');
    expect(response.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
    expect(JSON.parse(response.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
      servedAlert(a.name, 'HTTP 503', b.name, 1),
    );
    // the 503 is tried once more on its step before the fallback (decisions §3)
    expect(modelsSent(a.fake)).toEqual(['m-a', 'm-a']);
    expect(modelsSent(b.fake)).toEqual(['m-b']);
    expect(response.headers.get('x-svc-attempts')).toBe('3');
  });

  it('exposes the entry-step headers on the raw response of asResponse()', async () => {
    const { a, b, client } = await clientFor('sdk raw');

    const response = await client.chat.completions.create({ model: 'm-a', messages }).asResponse();

    expect(response.status).toBe(200);
    expect(response.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(response.headers.get('x-svc-is-fallback')).toBe('false');
    expect(response.headers.get('x-svc-fallback-level')).toBe('0');
    expect(response.headers.get('x-svc-fallback-alert')).toBeNull();
    const body = (await response.json()) as { provider: string; object: string };
    expect(body).toMatchObject({ object: 'chat.completion', provider: a.name });
    expect(b.fake.count()).toBe(0);
  });

  it('streams a failed-over completion, with the headers from withResponse()', async () => {
    const { a, b, client } = await clientFor('sdk stream');
    a.fake.setMode('rate429');

    const { data: stream, response } = await client.chat.completions
      .create({ model: 'm-a', messages, stream: true })
      .withResponse();
    let text = '';
    const providers = new Set<string>();
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      providers.add((chunk as unknown as { provider: string }).provider);
    }

    expect(text).toBe(b.fake.replyFor('m-b'));
    expect([...providers]).toEqual([b.name]);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-svc-provider-used')).toBe(b.name);
    expect(response.headers.get('x-svc-fallback-level')).toBe('1');
    expect(JSON.parse(response.headers.get('x-svc-fallback-alert') ?? 'null')).toEqual(
      servedAlert(a.name, 'HTTP 429', b.name, 1),
    );
    expect(b.fake.requests.map((r) => ({ model: r.model, stream: r.stream }))).toEqual([
      { model: 'm-b', stream: true },
    ]);
  });

  it('streams through the SDK with a usage chunk when stream_options asks for it', async () => {
    const { a, client } = await clientFor('sdk stream usage');

    const stream = await client.chat.completions.create({
      model: 'm-a',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | null | undefined;
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }

    expect(text).toBe(a.fake.replyFor('m-a'));
    expect(usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
    });
  });

  it('raises BadRequestError with the upstream message when the upstream rejects the request, without failing over', async () => {
    const { a, b, client } = await clientFor('sdk 400');
    a.fake.setMode('bad400', { message: "Invalid 'messages[0].content': string too long." });

    const error = await client.chat.completions.create({ model: 'm-a', messages }).then(
      () => null,
      (err: unknown) => err,
    );

    expect(error).toBeInstanceOf(BadRequestError);
    const rejected = error as BadRequestError;
    expect(rejected.status).toBe(400);
    expect(rejected.message).toContain("Invalid 'messages[0].content': string too long.");
    expect(rejected.code).toBe('upstream_rejected');
    expect(rejected.type).toBe('invalid_request_error');
    expect(rejected.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(rejected.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
    expect(rejected.requestID).toBe(rejected.headers.get('x-svc-request-id'));
    expect(b.fake.count()).toBe(0);
  });

  it('raises BadRequestError for a streamed request the upstream rejects', async () => {
    const { a, b, client } = await clientFor('sdk stream 400');
    a.fake.setMode('bad400', { message: 'stream refused by upstream' });

    const error = await client.chat.completions.create({ model: 'm-a', messages, stream: true }).then(
      () => null,
      (err: unknown) => err,
    );

    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain('stream refused by upstream');
    expect(b.fake.count()).toBe(0);
  });

  it('raises BadRequestError with param model for a model the chain does not serve', async () => {
    const { client } = await clientFor('sdk unknown model');

    const error = await client.chat.completions.create({ model: 'gpt-unknown', messages }).then(
      () => null,
      (err: unknown) => err,
    );

    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ code: 'model_not_supported', param: 'model' });
  });

  it('raises a 502 APIError with the alert header when every provider fails', async () => {
    const { a, b, client } = await clientFor('sdk exhausted');
    a.fake.setMode('error500');
    b.fake.setMode('auth401');

    const error = await client.chat.completions.create({ model: 'm-a', messages }).then(
      () => null,
      (err: unknown) => err,
    );

    expect(error).toBeInstanceOf(InternalServerError);
    const failed = error as InternalServerError;
    expect(failed.status).toBe(502);
    expect(failed.code).toBe('all_providers_failed');
    expect(failed.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
    expect(failed.requestID).toBe(failed.headers.get('x-svc-request-id'));
    expect(JSON.parse(failed.headers.get('x-svc-fallback-alert') ?? 'null')).toMatchObject({
      exhausted_provider: b.name,
    });
  });

  it('raises an APIError from the stream when the upstream breaks after the first chunk and no later step continues it', async () => {
    const { a, b, client } = await clientFor('sdk broken stream', ['none']);
    a.fake.setMode('dropAfterFirstChunk');

    const stream = await client.chat.completions.create({ model: 'm-a', messages, stream: true });
    const received: string[] = [];
    const error = await (async () => {
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta?.content ?? '');
    })().then(
      () => null,
      (err: unknown) => err,
    );

    expect(received.length).toBe(1);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain(a.name);
    expect(b.fake.count(CHAT_PATH)).toBe(0);
  });
});
