import { FakeOpenAi, startFakeOpenAi } from '../../test/fakes/fake-openai';
import type { ResolvedProvider } from '../config/gateway-config';
import { classify } from '../failover/chain';
import { ChatChunk, ChatRequest } from './provider-adapter';
import { OpenAiAdapter, OpenAiAdapterFactory } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const request: ChatRequest = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi there' }], temperature: 0.2 };
const ctx = (signal: AbortSignal = new AbortController().signal, model = 'gpt-5.4-mini') => ({
  model,
  signal,
  requestId: 'req_test',
});

/** The outcome an adapter call failed with (fails the test when it succeeded or threw something else). */
async function drain(stream: AsyncIterable<ChatChunk>, seen: ChatChunk[] = []): Promise<ChatChunk[]> {
  for await (const chunk of stream) seen.push(chunk);
  return seen;
}

const contentOf = (chunks: ChatChunk[]): string =>
  chunks.map((c) => (c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '').join('');

describe('OpenAiAdapter against a real OpenAI-compatible server', () => {
  let fake: FakeOpenAi;
  let adapter: OpenAiAdapter;

  beforeAll(async () => {
    fake = await startFakeOpenAi({ name: 'primary' });
    const provider: ResolvedProvider = {
      name: 'primary',
      kind: 'openai',
      baseUrl: fake.url,
      apiKey: 'sk-upstream',
      groupId: null,
      timeoutMs: null,
      capabilities: ['chat', 'speech'],
    };
    adapter = new OpenAiAdapterFactory().create(provider);
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.clearModelModes();
    fake.chunkDelayMs = 0;
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  it("passes the request through with the step's model and the provider's bearer key", async () => {
    const completion = await adapter.chat(request, ctx());
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-5.4-mini',
      usage: { total_tokens: expect.any(Number) },
    });
    expect(completion.choices).toEqual([
      expect.objectContaining({ message: expect.objectContaining({ content: 'Hello from primary (gpt-5.4-mini).' }) }),
    ]);
    const [sent] = fake.requests;
    expect(sent).toMatchObject({ path: '/v1/chat/completions', method: 'POST', model: 'gpt-5.4-mini', stream: false });
    expect(sent.headers.authorization).toBe('Bearer sk-upstream');
    expect(sent.body).toEqual({ ...request, model: 'gpt-5.4-mini' });
  });

  it('streams the upstream chunks through until [DONE] and reuses the connection afterwards', async () => {
    const first = await drain(await adapter.chatStream({ ...request, stream: true }, ctx()));
    const second = await drain(
      await adapter.chatStream({ ...request, stream: true, stream_options: { include_usage: true } }, ctx()),
    );
    expect(first[0]).toMatchObject({ object: 'chat.completion.chunk', model: 'gpt-5.4-mini' });
    expect(contentOf(first)).toBe('Hello from primary (gpt-5.4-mini).');
    expect(second.at(-1)?.usage).toMatchObject({ total_tokens: expect.any(Number) });
    expect(fake.requests.map((r) => r.stream)).toEqual([true, true]);
    expect(fake.connectionsAccepted).toBe(1);
  });

  it('leaves stream and stream_options out of a non-streaming call (OpenAI refuses stream_options there), the rest in order', async () => {
    await adapter.chat({ ...request, stream: false, stream_options: { include_usage: true }, user: 'u-1' }, ctx());
    const [sent] = fake.requests;
    expect(sent.body).toEqual({ ...request, model: 'gpt-5.4-mini', user: 'u-1' });
    expect(Object.keys(sent.body as object)).toEqual(['model', 'messages', 'temperature', 'user']);
  });

  it('maps a 500 to an http outcome the core fails over on', async () => {
    fake.setMode('error500');
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 500,
      message: 'primary: The server had an error while processing your request.',
      error: { type: 'server_error' },
    });
    expect(classify(outcome).verdict).toBe('next');
  });

  it('reports the configured 5xx status, e.g. 503', async () => {
    fake.setMode('error500', { status: 503 });
    expect(await outcomeOf(() => adapter.chat(request, ctx()))).toMatchObject({ kind: 'http', status: 503 });
  });

  it('maps a 429 to an http outcome the core fails over on', async () => {
    fake.setMode('rate429');
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 429 });
    expect(classify(outcome).verdict).toBe('next');
  });

  it("maps a 401 (the provider's own key) to an http outcome the core fails over on", async () => {
    fake.setMode('auth401');
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 401 });
    expect(classify(outcome).verdict).toBe('next');
  });

  it("relays a 400 with the upstream's message as a client error", async () => {
    fake.setMode('bad400', { message: "Invalid value for 'temperature': must be at most 2." });
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 400,
      message: "Invalid value for 'temperature': must be at most 2.",
      error: { type: 'invalid_request_error' },
    });
    expect(classify(outcome).verdict).toBe('client_error');
  });

  it("keeps a refusal's own type, code and param, for the client to see as the upstream wrote them", async () => {
    fake.setMode('bad400', { code: 'content_policy_violation', param: 'messages', message: 'Refused by policy.' });
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 400,
      message: 'Refused by policy.',
      error: { type: 'invalid_request_error', code: 'content_policy_violation', param: 'messages' },
    });
    expect(classify(outcome).verdict).toBe('client_error');
  });

  it("classifies a 400 context_length_exceeded as the step's misfit, not the client's error", async () => {
    fake.setMode('bad400', { code: 'context_length_exceeded', param: 'messages', message: 'Too long for this model.' });
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(classify(outcome)).toEqual({
      verdict: 'misconfigured_step',
      breakerFailure: false,
      reason: 'HTTP 400 context_length',
      misfit: 'context_length',
    });
  });

  it('reads only the head of a huge error body and still reports the status', async () => {
    fake.setMode('bad400', { message: 'x'.repeat(200_000) });
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 400 });
    expect((outcome as { message: string }).message).toBe('x'.repeat(1000));
  });

  it("maps a 404 model_not_found to the step's misfit, and another 404 to a client error", async () => {
    fake.setMode('notfound404');
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 404,
      message: "The model 'gpt-5.4-mini' does not exist",
      error: { type: 'invalid_request_error', code: 'model_not_found' },
    });
    expect(classify(outcome)).toMatchObject({ verdict: 'misconfigured_step', misfit: 'model_not_found' });
    fake.setMode('notfound404', { code: null, message: 'No such file: file-abc' });
    expect(classify(await outcomeOf(() => adapter.chat(request, ctx()))).verdict).toBe('client_error');
  });

  it('rejects a stream before resolving when the upstream answers with an error status', async () => {
    fake.setMode('rate429');
    expect(await outcomeOf(() => adapter.chatStream({ ...request, stream: true }, ctx()))).toMatchObject({
      kind: 'http',
      status: 429,
    });
  });

  it('reports a timeout when a hanging upstream outlives the timeout signal', async () => {
    fake.setMode('hang');
    const started = Date.now();
    expect(await outcomeOf(() => adapter.chat(request, ctx(AbortSignal.timeout(150))))).toEqual({ kind: 'timeout' });
    expect(await outcomeOf(() => adapter.chatStream(request, ctx(AbortSignal.timeout(150))))).toEqual({
      kind: 'timeout',
    });
    expect(Date.now() - started).toBeLessThan(1500);
    await fake.waitUntil(() => fake.requests.every((r) => r.closedEarly));
  });

  it('reports a timeout when the first byte comes later than the timeout, and succeeds when it comes in time', async () => {
    fake.setMode('slowFirstByte', { delayMs: 400 });
    expect(await outcomeOf(() => adapter.chatStream(request, ctx(AbortSignal.timeout(100))))).toEqual({
      kind: 'timeout',
    });
    const chunks = await drain(await adapter.chatStream(request, ctx(AbortSignal.timeout(2000))));
    expect(contentOf(chunks)).toContain('primary');
  });

  it('treats a client cancel (a plain abort) as a cancelled connection, not a timeout', async () => {
    fake.setMode('hang');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await outcomeOf(() => adapter.chat(request, ctx(controller.signal)))).toMatchObject({
      kind: 'connection',
      code: 'ABORTED',
    });
  });

  it('maps a refused connection to a connection outcome', async () => {
    fake.setMode('refuse');
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({
      kind: 'connection',
      code: expect.stringMatching(/^(ECONNRESET|ECONNREFUSED|UND_ERR_SOCKET)$/),
    });
    expect(classify(outcome).verdict).toBe('next');
    expect(await outcomeOf(() => adapter.chatStream(request, ctx()))).toMatchObject({ kind: 'connection' });
  });

  it('yields the first chunk, then throws a connection failure when the upstream drops mid-stream', async () => {
    fake.setMode('dropAfterFirstChunk');
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome.kind).toBe('connection');
    expect(contentOf(seen)).toBe('Hello ');
  });

  it('ends a stream that closes cleanly after a finish_reason without [DONE] as complete', async () => {
    fake.setMode('endWithoutDone');
    const chunks = await drain(await adapter.chatStream(request, ctx()));
    expect(contentOf(chunks)).toBe(fake.replyFor('gpt-5.4-mini'));
  });

  it('throws STREAM_TRUNCATED when a stream closes cleanly with neither a finish_reason nor [DONE]', async () => {
    fake.setMode('endWithoutFinish');
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome).toMatchObject({ kind: 'connection', code: 'STREAM_TRUNCATED' });
    expect(seen.length).toBeGreaterThan(1);
  });

  it('skips up to 3 data events that are not JSON, and breaks the stream on the fourth', async () => {
    fake.setMode('malformed', { count: 3 });
    expect(contentOf(await drain(await adapter.chatStream(request, ctx())))).toBe(fake.replyFor('gpt-5.4-mini'));
    fake.setMode('malformed', { count: 4 });
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome).toMatchObject({ kind: 'provider_error', code: 'invalid_response' });
    expect(contentOf(seen)).toBe('Hello ');
  });

  it('closes the upstream connection when the signal aborts mid-stream', async () => {
    fake.chunkDelayMs = 100;
    const controller = new AbortController();
    const stream = await adapter.chatStream(request, ctx(controller.signal));
    const seen: ChatChunk[] = [];
    const outcome = outcomeOf(async () => {
      for await (const chunk of stream) {
        seen.push(chunk);
        controller.abort();
      }
    });
    expect(await outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    expect(seen).toHaveLength(1);
    await fake.waitUntil(() => fake.requests[0].closedEarly);
  });

  it('closes the upstream connection when the consumer stops iterating', async () => {
    fake.chunkDelayMs = 100;
    const stream = await adapter.chatStream(request, ctx());
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      break;
    }
    await fake.waitUntil(() => fake.requests[0].closedEarly);
  });

  it('fails only the model a per-model mode targets', async () => {
    fake.setMode('error500', { model: 'broken-model', status: 502 });
    expect(await outcomeOf(() => adapter.chat(request, ctx(undefined, 'broken-model')))).toMatchObject({
      kind: 'http',
      status: 502,
    });
    await expect(adapter.chat(request, ctx())).resolves.toMatchObject({ model: 'gpt-5.4-mini' });
  });

  it('probes with GET /models and reports a sick upstream', async () => {
    await adapter.probe(AbortSignal.timeout(1000));
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    fake.setMode('error500', { status: 503 });
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(1000)))).toMatchObject({
      kind: 'http',
      status: 503,
    });
  });
});
