import type { ResolvedProvider } from '../config/gateway-config';
import { classify } from '../failover/chain';
import { ChatChunk, ChatRequest } from './provider-adapter';
import { OpenAiAdapter } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { type Answer, cut, refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

const request: ChatRequest = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi there' }], temperature: 0.2 };
const ctx = (signal: AbortSignal = new AbortController().signal, model = 'gpt-5.4-mini') => ({
  model,
  signal,
  requestId: 'req_test',
});
const provider: ResolvedProvider = {
  name: 'primary',
  kind: 'openai',
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'sk-upstream',
  groupId: null,
  timeoutMs: null,
  capabilities: ['chat', 'speech'],
};

const replyFor = (model: string): string => `Hello from primary (${model}).`;
const usage = { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 };

/** An OpenAI chat.completion for `model`. */
const completion = (model: string): Record<string, unknown> => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1700000000,
  model,
  choices: [
    { index: 0, message: { role: 'assistant', content: replyFor(model) }, logprobs: null, finish_reason: 'stop' },
  ],
  usage,
});

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null = null): string =>
  JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });

/**
 * A chat stream as OpenAI sends it: the role with the first word, a chunk a word, the finish chunk, the usage chunk
 * (when asked), [DONE]. `malformed` events that are not JSON follow the first chunk; `finish`/`done` false leave
 * those out.
 */
function stream(model: string, { malformed = 0, finish = true, done = true, withUsage = false } = {}): Array<string> {
  const [first, ...rest] = replyFor(model).split(/(?<=\s)/);
  return [
    chunk(model, { role: 'assistant', content: first }),
    ...Array.from({ length: malformed }, (_, i) => `{"id": "chatcmpl-1", "choices": [ broken ${i}`),
    ...rest.map((word) => chunk(model, { content: word })),
    ...(finish ? [chunk(model, {}, 'stop')] : []),
    ...(finish && withUsage
      ? [JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model, choices: [], usage })]
      : []),
    ...(done ? ['[DONE]', chunk(model, { content: 'after the end' })] : []),
  ];
}

async function drain(stream: AsyncIterable<ChatChunk>, seen: ChatChunk[] = []): Promise<ChatChunk[]> {
  for await (const chunk of stream) seen.push(chunk);
  return seen;
}

const contentOf = (chunks: ChatChunk[]): string =>
  chunks.map((c) => (c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '').join('');

/** OpenAI's error body. */
const openAiError = (message: string, type: string, code: string | null = null, param: string | null = null) => ({
  error: { message, type, param, code },
});

describe('OpenAiAdapter: calls and replies (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: OpenAiAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor();
    adapter = new OpenAiAdapter(provider, {}, upstream);
  });

  it("passes the request through with the step's model and the provider's bearer key", async () => {
    upstream.answer({ json: completion('gpt-5.4-mini') });
    const answer = await adapter.chat(request, ctx());
    expect(answer).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-5.4-mini',
      usage: { total_tokens: expect.any(Number) },
    });
    expect(answer.choices).toEqual([
      expect.objectContaining({ message: expect.objectContaining({ content: 'Hello from primary (gpt-5.4-mini).' }) }),
    ]);
    const sent = upstream.only();
    expect(sent).toMatchObject({ op: 'text', method: 'POST', path: '/chat/completions' });
    expect(sent.headers).toEqual({ authorization: 'Bearer sk-upstream', 'content-type': 'application/json' });
    expect(sent.body).toEqual({ ...request, model: 'gpt-5.4-mini' });
  });

  it('sends no authorization header to a provider without a key', async () => {
    const keyless = new ScriptedExecutor({ json: completion('m') });
    await new OpenAiAdapter({ ...provider, apiKey: null }, {}, keyless).chat(request, ctx());
    expect(keyless.only().headers).toEqual({ 'content-type': 'application/json' });
  });

  it('fails a reply that is not a JSON object as invalid_response', async () => {
    upstream.answer({ text: '<html>oops</html>' }, { text: '[1, 2]' });
    expect(await outcomeOf(() => adapter.chat(request, ctx()))).toMatchObject({
      kind: 'provider_error',
      code: 'invalid_response',
    });
    expect(await outcomeOf(() => adapter.chat(request, ctx()))).toMatchObject({ code: 'invalid_response' });
  });

  it('streams the upstream chunks through until [DONE], asking for a stream with the stream options given', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini') }, { events: stream('gpt-5.4-mini', { withUsage: true }) });
    const first = await drain(await adapter.chatStream({ ...request, stream: true }, ctx()));
    const second = await drain(
      await adapter.chatStream({ ...request, stream: true, stream_options: { include_usage: true } }, ctx()),
    );
    expect(first[0]).toMatchObject({ object: 'chat.completion.chunk', model: 'gpt-5.4-mini' });
    // nothing after [DONE]
    expect(contentOf(first)).toBe('Hello from primary (gpt-5.4-mini).');
    expect(second.at(-1)?.usage).toMatchObject({ total_tokens: expect.any(Number) });
    expect(upstream.calls.map((c) => [c.op, c.path, (c.body as { stream: unknown }).stream])).toEqual([
      ['events', '/chat/completions', true],
      ['events', '/chat/completions', true],
    ]);
    expect(upstream.calls[1].body).toEqual({
      ...request,
      model: 'gpt-5.4-mini',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(upstream.calls.every((c) => !c.left)).toBe(true);
  });

  it('leaves stream and stream_options out of a non-streaming call (OpenAI refuses stream_options there), the rest in order', async () => {
    upstream.answer({ json: completion('gpt-5.4-mini') });
    await adapter.chat({ ...request, stream: false, stream_options: { include_usage: true }, user: 'u-1' }, ctx());
    const sent = upstream.only();
    expect(sent.body).toEqual({ ...request, model: 'gpt-5.4-mini', user: 'u-1' });
    expect(Object.keys(sent.body as object)).toEqual(['model', 'messages', 'temperature', 'user']);
  });

  it('reports a 500 as an http outcome the core fails over on', async () => {
    upstream.answer(
      refusal(500, openAiError('primary: The server had an error while processing your request.', 'server_error')),
    );
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 500,
      message: 'primary: The server had an error while processing your request.',
      error: { type: 'server_error' },
    });
    expect(classify(outcome).verdict).toBe('next');
  });

  it('reports the 5xx status the upstream gave, e.g. 503', async () => {
    upstream.answer(refusal(503, openAiError('busy', 'server_error')));
    expect(await outcomeOf(() => adapter.chat(request, ctx()))).toMatchObject({ kind: 'http', status: 503 });
  });

  it('reports a 429 as an http outcome the core fails over on', async () => {
    upstream.answer(refusal(429, openAiError('Rate limit reached', 'requests', 'rate_limit_exceeded')));
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 429 });
    expect(classify(outcome).verdict).toBe('next');
  });

  it("reports a 401 (the provider's own key) as an http outcome the core fails over on", async () => {
    upstream.answer(
      refusal(401, openAiError('Incorrect API key provided', 'invalid_request_error', 'invalid_api_key')),
    );
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'http', status: 401 });
    expect(classify(outcome).verdict).toBe('next');
  });

  it("relays a 400 with the upstream's message as a client error", async () => {
    upstream.answer(
      refusal(400, openAiError("Invalid value for 'temperature': must be at most 2.", 'invalid_request_error')),
    );
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
    upstream.answer(
      refusal(400, openAiError('Refused by policy.', 'invalid_request_error', 'content_policy_violation', 'messages')),
    );
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
    upstream.answer(
      refusal(
        400,
        openAiError('Too long for this model.', 'invalid_request_error', 'context_length_exceeded', 'messages'),
      ),
    );
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(classify(outcome)).toEqual({
      verdict: 'misconfigured_step',
      breakerFailure: false,
      reason: 'HTTP 400 context_length',
      misfit: 'context_length',
    });
  });

  it("maps a 404 model_not_found to the step's misfit, and another 404 to a client error", async () => {
    upstream.answer(
      refusal(404, openAiError("The model 'gpt-5.4-mini' does not exist", 'invalid_request_error', 'model_not_found')),
      refusal(404, openAiError('No such file: file-abc', 'invalid_request_error')),
    );
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 404,
      message: "The model 'gpt-5.4-mini' does not exist",
      error: { type: 'invalid_request_error', code: 'model_not_found' },
    });
    expect(classify(outcome)).toMatchObject({ verdict: 'misconfigured_step', misfit: 'model_not_found' });
    expect(classify(await outcomeOf(() => adapter.chat(request, ctx()))).verdict).toBe('client_error');
  });

  it('rejects a stream before resolving when the upstream answers with an error status', async () => {
    upstream.answer(refusal(429, openAiError('slow down', 'requests')));
    expect(await outcomeOf(() => adapter.chatStream({ ...request, stream: true }, ctx()))).toMatchObject({
      kind: 'http',
      status: 429,
    });
  });

  it("gives the call's own signal to the upstream: a timeout that fires while it hangs is a timeout", async () => {
    upstream.answer({ hang: true }, { hang: true });
    const signal = AbortSignal.timeout(50);
    expect(await outcomeOf(() => adapter.chat(request, ctx(signal)))).toEqual({ kind: 'timeout' });
    expect(await outcomeOf(() => adapter.chatStream(request, ctx(AbortSignal.timeout(50))))).toEqual({
      kind: 'timeout',
    });
    expect(upstream.calls[0].signal).toBe(signal);
  });

  it('treats a client cancel (a plain abort) as a cancelled connection, not a timeout', async () => {
    upstream.answer({ hang: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    expect(await outcomeOf(() => adapter.chat(request, ctx(controller.signal)))).toMatchObject({
      kind: 'connection',
      code: 'ABORTED',
    });
  });

  it('reports a refused connection as a connection outcome the core fails over on', async () => {
    upstream.answer({ fail: cut('ECONNREFUSED') }, { fail: cut('ECONNREFUSED') });
    const outcome = await outcomeOf(() => adapter.chat(request, ctx()));
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ECONNREFUSED' });
    expect(classify(outcome).verdict).toBe('next');
    expect(await outcomeOf(() => adapter.chatStream(request, ctx()))).toMatchObject({ kind: 'connection' });
  });

  it('yields the first chunk, then throws a connection failure when the upstream drops mid-stream', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini').slice(0, 1), then: cut() });
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome.kind).toBe('connection');
    expect(contentOf(seen)).toBe('Hello ');
  });

  it('ends a stream that closes cleanly after a finish_reason without [DONE] as complete', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini', { done: false }) });
    const chunks = await drain(await adapter.chatStream(request, ctx()));
    expect(contentOf(chunks)).toBe(replyFor('gpt-5.4-mini'));
  });

  it('throws STREAM_TRUNCATED when a stream closes cleanly with neither a finish_reason nor [DONE]', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini', { finish: false, done: false }) });
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome).toMatchObject({ kind: 'connection', code: 'STREAM_TRUNCATED' });
    expect(seen.length).toBeGreaterThan(1);
  });

  it('skips up to 3 data events that are not JSON, and breaks the stream on the fourth', async () => {
    upstream.answer(
      { events: stream('gpt-5.4-mini', { malformed: 3 }) },
      { events: stream('gpt-5.4-mini', { malformed: 4 }) },
    );
    expect(contentOf(await drain(await adapter.chatStream(request, ctx())))).toBe(replyFor('gpt-5.4-mini'));
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen));
    expect(outcome).toMatchObject({ kind: 'provider_error', code: 'invalid_response' });
    expect(contentOf(seen)).toBe('Hello ');
    expect(upstream.calls[1].left).toBe(true);
  });

  it('fails the stream with an error chunk sent mid-stream (vLLM, LiteLLM, OpenRouter), after the chunks before it', async () => {
    const [first] = stream('m');
    upstream.answer(
      { events: [first, JSON.stringify({ error: { message: 'backend died', code: 503 } }), '[DONE]'] },
      { events: [first, JSON.stringify({ error: { type: 'overloaded' } })] },
    );
    const seen: ChatChunk[] = [];
    expect(await outcomeOf(async () => drain(await adapter.chatStream(request, ctx()), seen))).toEqual({
      kind: 'provider_error',
      code: 503,
      message: 'backend died',
    });
    expect(contentOf(seen)).toBe('Hello ');
    expect(await outcomeOf(async () => drain(await adapter.chatStream(request, ctx())))).toEqual({
      kind: 'provider_error',
      code: 'overloaded',
    });
  });

  it('fails the next read when the signal aborts mid-stream, and leaves the upstream', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini') });
    const controller = new AbortController();
    const chunks = await adapter.chatStream(request, ctx(controller.signal));
    const seen: ChatChunk[] = [];
    const outcome = outcomeOf(async () => {
      for await (const chunk of chunks) {
        seen.push(chunk);
        controller.abort();
      }
    });
    expect(await outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    expect(seen).toHaveLength(1);
    expect(upstream.only().left).toBe(true);
  });

  it('leaves the upstream when the consumer stops iterating', async () => {
    upstream.answer({ events: stream('gpt-5.4-mini') });
    for await (const chunk of await adapter.chatStream(request, ctx())) {
      expect(chunk.object).toBe('chat.completion.chunk');
      break;
    }
    expect(upstream.only()).toMatchObject({ left: true, read: 1 });
  });

  it("asks the upstream for the step's model, whatever the client named", async () => {
    const byModel = (model: string): Answer =>
      model === 'broken-model' ? refusal(502, openAiError('bad gateway', 'server_error')) : { json: completion(model) };
    const routed = new ScriptedExecutor((call) => byModel((call.body as { model: string }).model));
    const routedAdapter = new OpenAiAdapter(provider, {}, routed);
    expect(await outcomeOf(() => routedAdapter.chat(request, ctx(undefined, 'broken-model')))).toMatchObject({
      kind: 'http',
      status: 502,
    });
    await expect(routedAdapter.chat(request, ctx())).resolves.toMatchObject({ model: 'gpt-5.4-mini' });
  });

  it('probes with GET /models and reports a sick upstream', async () => {
    upstream.answer({ json: { data: [] } }, refusal(503, openAiError('busy', 'server_error')));
    await adapter.probe(AbortSignal.timeout(1000));
    expect(upstream.calls[0]).toMatchObject({
      op: 'check',
      method: 'GET',
      path: '/models',
      headers: { authorization: 'Bearer sk-upstream' },
    });
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(1000)))).toMatchObject({
      kind: 'http',
      status: 503,
    });
  });

  it('closes its executor', async () => {
    await adapter.close();
    expect(upstream.closed).toBe(true);
  });
});
