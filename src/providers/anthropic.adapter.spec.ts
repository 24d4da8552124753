import type { ResolvedProvider } from '../config/gateway-config';
import { classify } from '../failover/chain';
import { ChatChunk, ChatRequest } from './provider-adapter';
import type { SseEvent } from './sse';
import { AnthropicAdapter, toAnthropicRequest } from './anthropic.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

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

const provider: ResolvedProvider = {
  name: 'claude',
  kind: 'anthropic',
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'sk-ant-test',
  groupId: null,
  timeoutMs: null,
  capabilities: ['chat'],
};
const replyFor = (model: string): string => `Hello from claude-fake (${model}).`;

/** A Messages API reply. */
const message = (model: string, stopReason = 'end_turn'): Record<string, unknown> => ({
  id: 'msg_fake_1',
  type: 'message',
  role: 'assistant',
  model,
  content: [{ type: 'text', text: replyFor(model) }],
  stop_reason: stopReason,
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 7 },
});

/** A Messages API stream as Anthropic sends it; `error` replaces the deltas, `stop` false leaves message_stop out. */
function stream(model: string, { error = false, stop = true, stopReason = 'end_turn' } = {}): SseEvent[] {
  const start = { id: 'msg_fake_1', type: 'message', role: 'assistant', model, content: [], stop_reason: null };
  const events: Array<[string, unknown]> = [
    ['message_start', { type: 'message_start', message: { ...start, usage: { input_tokens: 12, output_tokens: 1 } } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ['ping', { type: 'ping' }],
  ];
  if (error) events.push(['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
  else {
    for (const word of replyFor(model).split(/(?<=\s)/))
      events.push([
        'content_block_delta',
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } },
      ]);
    events.push(
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      [
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: stopReason, stop_sequence: null },
          usage: { output_tokens: 7 },
        },
      ],
    );
    if (stop) events.push(['message_stop', { type: 'message_stop' }]);
  }
  return events.map(([event, data]) => ({ event, data: JSON.stringify(data) }));
}

/** Anthropic's error body. */
const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message } });

describe('AnthropicAdapter: Messages API calls and replies (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: AnthropicAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor();
    adapter = new AnthropicAdapter(provider, {}, upstream);
  });

  it('sends a Messages API request with the key, version, system prompt and step model', async () => {
    upstream.answer({ json: message('claude-haiku-4-5') });
    await adapter.chat({ ...conversation, max_tokens: 200 }, ctx());
    const sent = upstream.only();
    expect(sent).toMatchObject({ op: 'json', method: 'POST', path: '/messages' });
    expect(sent.headers).toEqual({
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    });
    expect(sent.body).toEqual(toAnthropicRequest({ ...conversation, max_tokens: 200 }, 'claude-haiku-4-5', false));
    expect(sent.body).toMatchObject({ system: 'You are terse.', max_tokens: 200, messages: expect.any(Array) });
    expect((sent.body as { stream?: boolean }).stream).toBeUndefined();
  });

  it('answers with a chat.completion carrying the text, finish_reason stop and OpenAI usage', async () => {
    upstream.answer({ json: message('claude-haiku-4-5') });
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
    upstream.answer({ json: message('claude-haiku-4-5', 'max_tokens') });
    const completion = await adapter.chat(conversation, ctx());
    expect(completion.choices).toEqual([expect.objectContaining({ finish_reason: 'length' })]);
  });

  it('streams chat.completion.chunks: the role first, the text deltas, then finish_reason with usage', async () => {
    upstream.answer({ events: stream('claude-haiku-4-5') });
    const chunks = await drain(await adapter.chatStream({ ...conversation, stream: true }, ctx()));
    expect(upstream.only()).toMatchObject({ op: 'events', path: '/messages', body: { stream: true } });
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

  it('reports a 529 overload as an http outcome the core fails over on', async () => {
    upstream.answer(refusal(529, anthropicError('overloaded_error', 'Overloaded')));
    const outcome = await outcomeOf(() => adapter.chat(conversation, ctx()));
    expect(outcome).toEqual({ kind: 'http', status: 529, message: 'Overloaded', error: { type: 'overloaded_error' } });
    expect(classify(outcome).verdict).toBe('next');
  });

  it('reports a 429 and a 500 as http outcomes the core fails over on', async () => {
    upstream.answer(
      refusal(429, anthropicError('rate_limit_error', 'Rate limited')),
      refusal(500, anthropicError('api_error', 'Internal server error')),
    );
    expect(await outcomeOf(() => adapter.chatStream(conversation, ctx()))).toMatchObject({ kind: 'http', status: 429 });
    expect(await outcomeOf(() => adapter.chat(conversation, ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it("relays a 400 with Anthropic's message as a client error", async () => {
    upstream.answer(
      refusal(400, anthropicError('invalid_request_error', 'max_tokens: must be greater than or equal to 1')),
    );
    const outcome = await outcomeOf(() => adapter.chat(conversation, ctx()));
    expect(outcome).toEqual({
      kind: 'http',
      status: 400,
      message: 'max_tokens: must be greater than or equal to 1',
      error: { type: 'invalid_request_error' },
    });
    expect(classify(outcome).verdict).toBe('client_error');
  });

  it('throws from the iterator when an error event arrives mid-stream, as the HTTP status its type stands for', async () => {
    upstream.answer({ events: stream('claude-haiku-4-5', { error: true }) });
    const seen: ChatChunk[] = [];
    const outcome = await outcomeOf(async () => drain(await adapter.chatStream(conversation, ctx()), seen));
    expect(outcome).toEqual({ kind: 'http', status: 529, message: 'Overloaded', error: { type: 'overloaded_error' } });
    expect(seen).toHaveLength(1);
  });

  it('ends a stream that closes cleanly after its message_delta, without message_stop, as complete', async () => {
    upstream.answer({ events: stream('claude-haiku-4-5', { stop: false }) });
    const chunks = await drain(await adapter.chatStream(conversation, ctx()));
    const last = chunks[chunks.length - 1].choices as Array<{ finish_reason: string | null }>;
    expect(last[0].finish_reason).toBe('stop');
    const text = chunks
      .map((c) => (c.choices as Array<{ delta: { content?: string } }>)[0].delta.content ?? '')
      .join('');
    expect(text).toBe(replyFor('claude-haiku-4-5'));
  });

  it("gives the call's own signal to the upstream: a timeout that fires while it hangs is a timeout", async () => {
    upstream.answer({ hang: true });
    const signal = AbortSignal.timeout(50);
    expect(await outcomeOf(() => adapter.chat(conversation, ctx(signal)))).toEqual({ kind: 'timeout' });
    expect(upstream.only().signal).toBe(signal);
  });

  it('leaves the upstream when the consumer stops iterating', async () => {
    upstream.answer({ events: stream('claude-haiku-4-5') });
    for await (const chunk of await adapter.chatStream(conversation, ctx())) {
      expect(choiceOf(chunk).delta.role).toBe('assistant');
      break;
    }
    expect(upstream.only().left).toBe(true);
  });

  it('probes GET /models with the same key and version headers', async () => {
    upstream.answer({ json: { data: [] } }, refusal(401, anthropicError('authentication_error', 'invalid x-api-key')));
    await adapter.probe(AbortSignal.timeout(1000));
    expect(upstream.calls[0]).toMatchObject({ op: 'check', method: 'GET', path: '/models' });
    expect(upstream.calls[0].headers).toEqual({ 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' });
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(1000)))).toMatchObject({
      kind: 'http',
      status: 401,
    });
  });
});
