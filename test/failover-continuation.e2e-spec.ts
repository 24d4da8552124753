import OpenAI from 'openai';
import { parseGatewayConfig } from '../src/config/gateway-config';
import type { ContinuationMode } from '../src/config/continuation';
import { FakeAnthropic, startFakeAnthropic } from './fakes/fake-anthropic';
import { FakeOpenAi, FakeOpenAiOptions, startFakeOpenAi } from './fakes/fake-openai';
import { prefillOf } from './fakes/fake-upstream';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  entryOf,
  eventually,
  health,
  SseData,
  storedEvents,
  streamChat,
  StreamedChat,
} from './support/failover';

/** Every upstream's whole answer (a restart repeats it); OTHER says something else after its first two words. */
const REPLY = 'The quick brown fox jumps over the lazy dog, then naps in the warm sun.';
const OTHER = 'The quick red fox naps.';
const IDLE_MS = 400;
const POOL = 20;

interface Upstream<F> {
  name: string;
  fake: F;
}

type Step = { provider: string; model: string; continuation?: ContinuationMode[] };
type Chunk = Exclude<SseData, '[DONE]'>;

/** The text delivered before `n` word chunks of REPLY were cut. */
const firstWords = (n: number): string =>
  REPLY.split(/(?<=\s)/)
    .slice(0, n)
    .join('');

/**
 * A chat stream that breaks after its first byte is continued on a later step (decisions §3): by `restart` (the
 * request again, its repeat of the delivered text swallowed) or `prefill` (the delivered text as a trailing assistant
 * turn), so the client reads one whole answer; only when no step continues it, the explicit error event.
 */
describe('continued chat streams', () => {
  let t: TestApp;
  const openai: Array<Upstream<FakeOpenAi>> = [];
  const claude: Array<Upstream<FakeAnthropic>> = [];
  let other: Upstream<FakeOpenAi>;
  let prefilling: Upstream<FakeOpenAi>;

  beforeAll(async () => {
    const start = async (name: string, options: FakeOpenAiOptions = {}): Promise<Upstream<FakeOpenAi>> => ({
      name,
      fake: await startFakeOpenAi({ name, reply: REPLY, ...options }),
    });
    openai.push(...(await Promise.all(Array.from({ length: POOL }, (_, i) => start(`cont-o${i}`)))));
    other = await start('cont-other', { reply: OTHER });
    prefilling = await start('cont-prefill', { prefill: true });
    for (let i = 0; i < 3; i++) {
      const name = `cont-c${i}`;
      claude.push({ name, fake: await startFakeAnthropic({ name, reply: REPLY }) });
    }
    const entry = (name: string, kind: string, url: string, extra = ''): string =>
      `  - { name: ${name}, kind: ${kind}, base_url: "${url}", api_key: k, stream_idle_timeout_ms: ${IDLE_MS}${extra} }`;
    const yaml = [
      'providers:',
      ...[...openai, other].map((p) => entry(p.name, 'openai', p.fake.url)),
      // the provider-level setting: this server continues a prefilled turn
      entry(prefilling.name, 'openai', prefilling.fake.url, ', continuation: [prefill, restart]'),
      ...claude.map((p) => entry(p.name, 'anthropic', p.fake.url)),
    ].join('\n');
    t = await startApp({ gateway: parseGatewayConfig(yaml, 'continuation test gateway') });
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([...openai, ...claude, other, prefilling].filter(Boolean).map((p) => p.fake.close()));
  });

  let next = 0;
  const fresh = (): Upstream<FakeOpenAi> => openai[next++];
  const key = async (label: string, steps: Step[]): Promise<string> => (await t.createKey(label, steps)).secret;
  const chunks = (res: StreamedChat): Chunk[] => res.events.filter((e): e is Chunk => e !== '[DONE]');
  const marks = (res: StreamedChat): unknown[] => chunks(res).flatMap((c) => ('svc_continuation' in c ? [c] : []));
  const chatRequests = (fake: FakeOpenAi): Array<Record<string, unknown>> =>
    fake.requests.filter((r) => r.path === CHAT_PATH).map((r) => r.body as Record<string, unknown>);

  /** One whole answer, [DONE], no error; the chunks name `from` up to the marked one, `to` from there. */
  function expectContinued(res: StreamedChat, from: string, to: string, mode: string, delivered: string): void {
    expect(res.status).toBe(200);
    expect(res.content).toBe(REPLY);
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    expect(chunks(res).filter((c) => 'error' in c)).toEqual([]);
    const all = chunks(res);
    const at = all.findIndex((c) => 'svc_continuation' in c);
    expect(marks(res)).toHaveLength(1);
    expect(all[at].svc_continuation).toEqual({ from, to, mode, offset: delivered.length });
    expect(new Set(all.slice(0, at).map((c) => c.provider))).toEqual(new Set([from]));
    expect(new Set(all.slice(at).map((c) => c.provider))).toEqual(new Set([to]));
    expect(res.headers.get('x-svc-provider-used')).toBe(from);
  }

  it('continues a stream cut after 3 chunks by restart on the next step: the whole answer once, the break recorded', async () => {
    const [a, b] = [fresh(), fresh()];
    const secret = await key('cut restart', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('cutAfter', { count: 3 });

    const res = await streamChat(t, secret, chatBody('m-a', { stream_options: { include_usage: true } }));

    expectContinued(res, a.name, b.name, 'restart', firstWords(3));
    const after = chunks(res).slice(chunks(res).findIndex((c) => 'svc_continuation' in c));
    expect(new Set(after.map((c) => c.model))).toEqual(new Set(['m-b']));
    // the restart is the original request again, and the final usage is its own
    expect(chatRequests(b.fake)).toEqual([{ ...chatRequests(a.fake)[0], model: 'm-b' }]);
    expect(after[after.length - 1].usage).toMatchObject({
      completion_tokens: Math.ceil(JSON.stringify(REPLY).length / 4),
    });
    const requestId = res.headers.get('x-svc-request-id') ?? '';
    const [event] = await storedEvents(t, "type = 'failover' AND data->>'request_id' = $1", [requestId], 'event');
    expect(event.data).toMatchObject({ mid_stream: true, exhausted_provider: a.name, active_provider: b.name });
    expect(entryOf(await health(t, secret), a.name)).toMatchObject({ consecutive_failures: 1 });
    const records = await eventually(
      async () => {
        const usage = await t.http.get('/v1/usage').query({ request_id: requestId }).auth(secret, { type: 'bearer' });
        return (usage.body as { data?: Array<Record<string, unknown>> }).data ?? [];
      },
      (data) => data.length > 0,
      5000,
      'usage record',
    );
    expect(records[0]).toMatchObject({
      status: 200,
      provider: b.name,
      attempts: [
        { provider: a.name, outcome: 'ok' },
        { provider: a.name, outcome: expect.stringMatching(/^stream broke/) },
        { provider: b.name, outcome: 'ok' },
      ],
    });
  });

  it('continues a stream silent past its idle timeout by prefill on an Anthropic step, which sees the delivered text as the trailing assistant turn', async () => {
    const a = fresh();
    const c = claude[0];
    const secret = await key('stall prefill', [
      { provider: a.name, model: 'm-a' },
      { provider: c.name, model: 'claude-haiku-4-5' },
    ]);
    a.fake.setMode('stallAfter', { count: 2 });

    const res = await streamChat(t, secret, chatBody('m-a'));

    expectContinued(res, a.name, c.name, 'prefill', firstWords(2));
    // Anthropic takes no trailing white space on the prefilled turn: it went trimmed, the space was swallowed
    expect(c.fake.requests.map((r) => prefillOf(r.body))).toEqual([firstWords(2).trimEnd()]);
    expect(res.totalMs).toBeGreaterThanOrEqual(IDLE_MS);
  });

  it('falls to restart on the same step when it refuses the prefill (a 400 the client never sees)', async () => {
    const a = fresh();
    const c = claude[1];
    const secret = await key('no prefill', [
      { provider: a.name, model: 'm-a' },
      { provider: c.name, model: 'claude-haiku-4-5' },
    ]);
    a.fake.setMode('cutAfter', { count: 4 });
    c.fake.setMode('noPrefill');

    const res = await streamChat(t, secret, chatBody('m-a'));

    expectContinued(res, a.name, c.name, 'restart', firstWords(4));
    expect(c.fake.requests.map((r) => prefillOf(r.body))).toEqual([firstWords(4).trimEnd(), null]);
    expect(entryOf(await health(t, secret), c.name)).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
  });

  it('abandons a restart whose text differs at its first differing character and continues on the next step', async () => {
    const [a, c] = [fresh(), fresh()];
    const secret = await key('restart differs', [
      { provider: a.name, model: 'm-a' },
      { provider: other.name, model: 'm-other' },
      { provider: c.name, model: 'm-c' },
    ]);
    a.fake.setMode('cutAfter', { count: 4 });
    other.fake.chunkDelayMs = 100;

    const res = await streamChat(t, secret, chatBody('m-a'));

    expectContinued(res, a.name, c.name, 'restart', firstWords(4));
    // "The quick red": abandoned at "red", long before its last word would have come
    await other.fake.waitUntil(() => other.fake.requests[0]?.closedEarly === true, 1000);
    expect(c.fake.count(CHAT_PATH)).toBe(1);
    other.fake.chunkDelayMs = 0;
  });

  it('continues by prefill through a provider that takes one, read with the openai SDK', async () => {
    const a = fresh();
    const secret = await key('sdk prefill', [
      { provider: a.name, model: 'm-a' },
      { provider: prefilling.name, model: 'm-p' },
    ]);
    a.fake.setMode('cutAfter', { count: 5 });
    const client = new OpenAI({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });

    const messages = [{ role: 'user' as const, content: 'Say hello.' }];
    const stream = await client.chat.completions.create({ model: 'm-a', messages, stream: true });
    let text = '';
    const seen: Array<{ provider: string; mark?: unknown }> = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      const extra = chunk as unknown as { provider: string; svc_continuation?: unknown };
      seen.push({ provider: extra.provider, ...(extra.svc_continuation ? { mark: extra.svc_continuation } : {}) });
    }

    expect(text).toBe(REPLY);
    expect(seen.flatMap((s) => (s.mark ? [s.mark] : []))).toEqual([
      { from: a.name, to: prefilling.name, mode: 'prefill', offset: firstWords(5).length },
    ]);
    expect(seen[seen.length - 1].provider).toBe(prefilling.name);
    expect(chatRequests(prefilling.fake).map((body) => prefillOf(body))).toEqual([firstWords(5).trimEnd()]);
  });

  it('continues a stream broken by its fourth malformed event, and one ended by an upstream error event', async () => {
    const [a, b] = [fresh(), fresh()];
    const malformed = await key('malformed', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('malformed', { count: 4 });
    expectContinued(await streamChat(t, malformed, chatBody('m-a')), a.name, b.name, 'restart', firstWords(1));

    const c = claude[2];
    const d = fresh();
    const errorEvent = await key('error event', [
      { provider: c.name, model: 'claude-haiku-4-5' },
      { provider: d.name, model: 'm-d' },
    ]);
    c.fake.setMode('errorMidStream');
    // the Anthropic stream broke before any text: the role chunk was all it delivered
    const res = await streamChat(t, errorEvent, chatBody('claude-haiku-4-5'));
    expectContinued(res, c.name, d.name, 'restart', '');
  });

  it('ends with the explicit error naming the break, no [DONE], when no later step can continue', async () => {
    const [a, b, c] = [fresh(), fresh(), fresh()];
    const secret = await key('none left', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b', continuation: ['none'] },
      { provider: c.name, model: 'm-c' },
    ]);
    a.fake.setMode('cutAfter', { count: 2 });
    c.fake.setMode('error500', { status: 503 });

    const res = await streamChat(t, secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe(firstWords(2));
    expect(res.events).not.toContain('[DONE]');
    expect(marks(res)).toEqual([]);
    expect(res.events[res.events.length - 1]).toEqual({
      error: {
        message: expect.stringContaining(`from ${a.name} failed: connection`),
        type: 'upstream_error',
        param: null,
        code: 'upstream_stream_failed',
      },
      provider: a.name,
    });
    expect(b.fake.count()).toBe(0);
    // its 500 is retried once on the step (decisions §3, attempts on a step)
    expect(c.fake.count(CHAT_PATH)).toBe(2);
  });

  it.each([
    [
      'tool-call deltas',
      { tools: [{ type: 'function', function: { name: 'answer', parameters: { type: 'object' } } }] },
    ],
    ['several choices', { n: 2 }],
  ])('ends a stream carrying %s with the explicit error: no continuation', async (_what, extra) => {
    const [a, b] = [fresh(), fresh()];
    const secret = await key('not text', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    a.fake.setMode('cutAfter', { count: 2 });

    const res = await streamChat(t, secret, chatBody('m-a', extra));

    expect(res.events).not.toContain('[DONE]');
    expect(res.events[res.events.length - 1]).toMatchObject({ error: { code: 'upstream_stream_failed' } });
    expect(b.fake.count()).toBe(0);
  });
});
