import type { ResolvedProvider } from '../config/gateway-config';
import { ADAPTER_FACTORIES, ChatChunk, ChatRequest, UpstreamFailure } from './provider-adapter';
import { EchoAdapterFactory } from './echo.adapter';
import { CHAT_ADAPTER_FACTORIES } from './adapter-factories';

const provider: ResolvedProvider = {
  name: 'demo',
  kind: 'echo',
  baseUrl: null,
  apiKey: null,
  groupId: null,
  timeoutMs: null,
  capabilities: ['chat'],
};
const adapter = new EchoAdapterFactory().create(provider);
const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'echo-1',
  signal,
  requestId: 'req_test',
});
const request: ChatRequest = {
  model: 'echo-1',
  messages: [
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'an answer' },
    { role: 'user', content: [{ type: 'text', text: 'Tell me a joke' }] },
  ],
};

type Choice = { delta: { content?: string }; finish_reason: string | null };

describe('EchoAdapter', () => {
  it('labels itself as the demo echo provider and repeats the last user message', async () => {
    const completion = await adapter.chat(request, ctx());
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'echo-1',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: '[echo demo provider] You said: Tell me a joke' },
          finish_reason: 'stop',
        },
      ],
    });
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens! + usage.completion_tokens!);
  });

  it('streams the same reply word by word, ending with finish_reason stop and usage', async () => {
    const chunks: ChatChunk[] = [];
    for await (const chunk of await adapter.chatStream(request, ctx())) chunks.push(chunk);
    const choices = chunks.map((c) => (c.choices as Choice[])[0]);
    expect(choices.map((c) => c.delta.content ?? '').join('')).toBe('[echo demo provider] You said: Tell me a joke');
    expect(chunks.length).toBeGreaterThan(5);
    expect(choices.at(-1)?.finish_reason).toBe('stop');
    expect(chunks.at(-1)?.usage).toMatchObject({ total_tokens: expect.any(Number) });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it('stops streaming with an UpstreamFailure once the signal aborts', async () => {
    const controller = new AbortController();
    const stream = await adapter.chatStream(request, ctx(controller.signal));
    controller.abort();
    await expect(
      (async () => {
        for await (const _chunk of stream);
      })(),
    ).rejects.toBeInstanceOf(UpstreamFailure);
  });

  it('answers probes without any network', async () => {
    await expect(adapter.probe()).resolves.toBeUndefined();
  });
});

describe('CHAT_ADAPTER_FACTORIES', () => {
  it('offers one factory per chat kind, each an injectable class', () => {
    expect(typeof ADAPTER_FACTORIES).toBe('symbol');
    expect(CHAT_ADAPTER_FACTORIES.map((Factory) => new Factory().kind)).toEqual(['openai', 'anthropic', 'echo']);
  });
});
