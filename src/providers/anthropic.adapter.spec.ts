import { FakeAnthropic, startFakeAnthropic } from '../../test/fakes/fake-anthropic';
import type { ResolvedProvider } from '../config/gateway-config';
import { classify } from '../failover/chain';
import { ChatChunk, ChatRequest } from './provider-adapter';
import { AnthropicAdapter, AnthropicAdapterFactory, toAnthropicRequest } from './anthropic.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'claude-haiku-4-5',
  signal,
  requestId: 'req_test',
});

const conversation: ChatRequest = {
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] },
    { role: 'assistant', content: '4' },
    { role: 'user', content: 'And 3+3?' },
  ],
};

async function drain(stream: AsyncIterable<ChatChunk>, seen: ChatChunk[] = []): Promise<ChatChunk[]> {
  for await (const chunk of stream) seen.push(chunk);
  return seen;
}

type Choice = { delta: { role?: string; content?: string }; finish_reason: string | null };
const choiceOf = (chunk: ChatChunk): Choice => (chunk.choices as Choice[])[0];

describe('toAnthropicRequest', () => {
  it('moves system messages to `system`, maps sampling options and defaults max_tokens to 1024', () => {
    const translated = toAnthropicRequest(
      { ...conversation, temperature: 0.3, top_p: 0.9, stop: 'END' },
      'claude-x',
      false,
    );
    expect(translated).toEqual({
      model: 'claude-x',
      max_tokens: 1024,
      system: 'You are terse.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] },
        { role: 'assistant', content: '4' },
        { role: 'user', content: 'And 3+3?' },
      ],
      temperature: 0.3,
      top_p: 0.9,
      stop_sequences: ['END'],
    });
  });

  it('takes max_completion_tokens, stop lists and image parts', () => {
    const translated = toAnthropicRequest(
      {
        model: 'm',
        max_completion_tokens: 50,
        stop: ['a', 'b'],
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } }] },
        ],
      },
      'claude-x',
      true,
    );
    expect(translated).toMatchObject({ max_tokens: 50, stop_sequences: ['a', 'b'], stream: true });
    expect(translated.messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } }],
      },
    ]);
  });
});

describe('AnthropicAdapter against a real Messages API server', () => {
  let fake: FakeAnthropic;
  let adapter: AnthropicAdapter;

  beforeAll(async () => {
    fake = await startFakeAnthropic({ name: 'claude-fake' });
    const provider: ResolvedProvider = {
      name: 'claude',
      kind: 'anthropic',
      baseUrl: fake.url,
      apiKey: 'sk-ant-test',
      groupId: null,
      timeoutMs: null,
      capabilities: ['chat'],
    };
    adapter = new AnthropicAdapterFactory().create(provider);
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.stopReason = 'end_turn';
    fake.chunkDelayMs = 0;
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  it('sends a Messages API request with the key, version, system prompt and step model', async () => {
    await adapter.chat({ ...conversation, max_tokens: 200 }, ctx());
    const [sent] = fake.requests;
    expect(sent).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      model: 'claude-haiku-4-5',
      stream: false,
    });
    expect(sent.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.body).toMatchObject({ system: 'You are terse.', max_tokens: 200, messages: expect.any(Array) });
  });

  it('answers with a chat.completion carrying the text, finish_reason stop and OpenAI usage', async () => {
    const completion = await adapter.chat(conversation, ctx());
    expect(completion).toMatchObject({
      id: expect.stringMatching(/^msg_fake_/),
      object: 'chat.completion',
      model: 'claude-haiku-4-5',
      created: expect.any(Number),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello from claude-fake (claude-haiku-4-5).' },
          finish_reason: 'stop',
        },
      ],
    });
    const usage = completion.usage!;
    expect(usage.total_tokens).toBe(usage.prompt_tokens! + usage.completion_tokens!);
    expect(usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('maps stop_reason max_tokens to finish_reason length', async () => {
    fake.stopReason = 'max_tokens';
    const completion = await adapter.chat(conversation, ctx());
    expect(completion.choices).toEqual([expect.objectContaining({ finish_reason: 'length' })]);
  });

  it('streams chat.completion.chunks: the role first, the text deltas, then finish_reason with usage', async () => {
    const chunks = await drain(await adapter.chatStream({ ...conversation, stream: true }, ctx()));
    expect(fake.requests[0]).toMatchObject({ stream: true });
    expect(
      chunks.every(
        (c) => c.object === 'chat.completion.chunk' && typeof c.id === 'string' && c.id.startsWith('msg_fake_'),
      ),
    ).toBe(true);
    expect(choiceOf(chunks[0]).delta).toEqual({ role: 'assistant', content: '' });
    const text = chunks.map((c) => choiceOf(c).delta.content ?? '').join('');
    expect(text).toBe('Hello from claude-fake (claude-haiku-4-5).');
    const last = chunks.at(-1)!;
    expect(choiceOf(last).finish_reason).toBe('stop');
    expect(last.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: expect.any(Number),
    });
    expect(chunks.slice(0, -1).every((c) => choiceOf(c).finish_reason === null)).toBe(true);
  });

  it('maps a 529 overload to an http outcome the core fails over on', async () => {
    fake.setMode('overloaded529');
    const outcome = await outcomeOf(() => adapter.chat(conversation, ctx()));
    expect(outcome).toEqual({ kind: 'http', status: 529, message: 'Overloaded', error: { type: 'overloaded_error' } });
    expect(classify(outcome).verdict).toBe('next');
  });

  it('maps a 429 and a 500 to http outcomes the core fails over on', async () => {
    fake.setMode('rate429');
    expect(await outcomeOf(() => adapter.chatStream(conversation, ctx()))).toMatchObject({ kind: 'http', status: 429 });
    fake.setMode('error500');
    expect(await outcomeOf(() => adapter.chat(conversation, ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it("relays a 400 with Anthropic's message as a client error", async () => {
    fake.setMode('bad400', { message: 'max_tokens: must be greater than or equal to 1' });
    const outcome = await outcomeOf(() => adapter.chat(conversation, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 400,
      message: 'max_tokens: must be greater than or equal to 1',
      error: { type: 'invalid_request_error' },
    });
    expect(classify(outcome).verdict).toBe('client_error');
  });

  it('throws from the iterator when an error event arrives mid-stream', async () => {
    fake.setMode('errorMidStream');
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(conversation, ctx()), seen));
    expect(outcome).toEqual({ kind: 'http', status: 529, message: 'Overloaded', error: { type: 'overloaded_error' } });
    expect(seen).toHaveLength(1);
  });

  it('ends a stream that closes cleanly after its message_delta, without message_stop, as complete', async () => {
    fake.setMode('endWithoutStop');
    const chunks = await drain(await adapter.chatStream(conversation, ctx()));
    const last = chunks[chunks.length - 1].choices as Array<{ finish_reason: string | null }>;
    expect(last[0].finish_reason).toBe('stop');
    const text = chunks
      .map((c) => (c.choices as Array<{ delta: { content?: string } }>)[0].delta.content ?? '')
      .join('');
    expect(text).toBe(fake.replyFor('claude-haiku-4-5'));
  });

  it('reports a timeout when the upstream hangs past the timeout signal', async () => {
    fake.setMode('hang');
    expect(await outcomeOf(() => adapter.chat(conversation, ctx(AbortSignal.timeout(150))))).toEqual({
      kind: 'timeout',
    });
  });

  it('closes the upstream connection when the consumer stops iterating', async () => {
    fake.chunkDelayMs = 100;
    for await (const chunk of await adapter.chatStream(conversation, ctx())) {
      expect(choiceOf(chunk).delta.role).toBe('assistant');
      break;
    }
    await fake.waitUntil(() => fake.requests[0].closedEarly);
  });

  it('probes GET /models with the same key and version headers', async () => {
    await adapter.probe(AbortSignal.timeout(1000));
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/models' });
    expect(fake.requests[0].headers).toMatchObject({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' });
    fake.setMode('auth401');
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(1000)))).toMatchObject({
      kind: 'http',
      status: 401,
    });
  });
});
