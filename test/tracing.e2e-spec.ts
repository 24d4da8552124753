import { tracing } from '../src/tracing/tracing';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, ProviderPool, streamChat } from './support/failover';
import { startFakeOpenAiRealtime } from './fakes/fake-openai-realtime';
import { OtlpReceiver, ReceivedSpan, SPAN_KIND } from './fakes/otlp-receiver';
import { clientTraceparent, exportedStrings, OTEL_VARIABLES } from './support/traces';
import { speak, SPEECH_PATH } from './support/speech';
import { StreamClient } from './support/ws-client';

const PROMPT = 'Say hello.';
const TTS_MODEL = 'gpt-4o-mini-tts';
const RT_MODEL = 'gpt-realtime-2.1-mini';
const MINIMAX_MODEL = 'speech-02-hd';
const TEXT = 'A sentence nobody may read in a trace.';

const parseTraceparent = (value: unknown): { traceId: string; spanId: string } | null => {
  const match = typeof value === 'string' ? /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(value) : null;
  return match ? { traceId: match[1], spanId: match[2] } : null;
};

/** decisions §12: one SERVER span per proxied request, one CLIENT span per upstream attempt, both OTLP encodings. */
describe.each(['http/protobuf', 'http/json'])('traces exported over OTLP %s', (protocol) => {
  let receiver: OtlpReceiver;
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    pool = await ProviderPool.start(`tr-${protocol === 'http/json' ? 'json' : 'pb'}`, 14, { minimax: { native: {} } });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    Object.assign(process.env, env);
    // as main.ts does: before the application (its request line and pipeline read whether traces are on)
    expect(tracing.start()).toBe(true);
    t = await startApp({ gateway: pool.gateway, env });
  });
  afterAll(async () => {
    // the application's shutdown flushes and stops the tracer
    await t?.close();
    for (const name of OTEL_VARIABLES) delete process.env[name];
    await pool?.close();
    await receiver?.close();
  });

  const serverSpanOf = async (requestId: string): Promise<ReceivedSpan> =>
    (await receiver.waitFor((s) => s.kind === SPAN_KIND.server && s.attributes['svc.request_id'] === requestId))[0];
  const clientSpansOf = async (server: ReceivedSpan, n: number): Promise<ReceivedSpan[]> =>
    (await receiver.waitFor((s) => s.kind === SPAN_KIND.client && s.parentSpanId === server.spanId, n)).sort(
      (x, y) => Number(x.attributes['svc.attempt']) - Number(y.attributes['svc.attempt']),
    );

  /** Two steps whose first fails (a 500): `a` is tried and retried, `b` serves. */
  const failingThenServing = async (label: string) => {
    const [a, b] = pool.take(2);
    a.fake.setMode('error500');
    const key = await t.createKey(label, [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    return { a, b, key };
  };
  /** A chat request, with the client's `traceparent` when given. */
  const chat = (secret: string, traceparent?: string) => {
    const req = t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`);
    return (traceparent ? req.set('traceparent', traceparent) : req).send(chatBody('m-a'));
  };

  it('joins the client traceparent: a SERVER span, a CLIENT span per attempt, each upstream given its own', async () => {
    const { a, b, key } = await failingThenServing('traced chat');
    const client = clientTraceparent();

    const res = await chat(key.secret, client.header);

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe(b.name);
    const server = await serverSpanOf(res.headers['x-svc-request-id']);
    expect(server).toMatchObject({
      traceId: client.traceId,
      parentSpanId: client.spanId,
      name: `POST ${CHAT_PATH}`,
      attributes: {
        'http.request.method': 'POST',
        'http.route': CHAT_PATH,
        'http.response.status_code': 200,
        'svc.proxy_key': key.id,
        'svc.fallback_level': 1,
      },
    });
    expect(server.resource['service.name']).toBe('svc-gateway');
    // the failing step's 500 is retried once on it (decisions §3), then the next step serves
    const [first, retried, second] = await clientSpansOf(server, 3);
    expect(first).toMatchObject({
      traceId: client.traceId,
      name: 'chat m-a',
      statusCode: 2,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'm-a',
        'svc.provider': a.name,
        'svc.attempt': 1,
        'svc.retry': 0,
        'error.type': '500',
      },
    });
    expect(retried).toMatchObject({
      name: 'chat m-a',
      statusCode: 2,
      attributes: { 'svc.provider': a.name, 'svc.attempt': 2, 'svc.retry': 1, 'error.type': '500' },
    });
    expect(second).toMatchObject({
      name: 'chat m-b',
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'm-b',
        'gen_ai.response.model': 'm-b',
        'svc.provider': b.name,
        'svc.fallback_level': 1,
        'svc.attempt': 3,
        'svc.retry': 0,
      },
    });
    expect(second.attributes['error.type']).toBeUndefined();
    expect(second.attributes['gen_ai.usage.input_tokens']).toEqual(res.body.usage.prompt_tokens);
    expect(second.attributes['gen_ai.usage.output_tokens']).toEqual(res.body.usage.completion_tokens);
    // each upstream got the traceparent of its own attempt's span, in the client's trace
    const upstreamParents = [a.fake.requests[0], a.fake.requests[1], b.fake.requests[0]].map((r) =>
      parseTraceparent(r.headers.traceparent),
    );
    expect(upstreamParents).toEqual(
      [first, retried, second].map((span) => ({ traceId: client.traceId, spanId: span.spanId })),
    );
    expect([...receiver.contentTypes]).toEqual([
      protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
    ]);
  });

  it("keeps a client's unsampled decision: no span exported, no traceresponse, each upstream told flag 00", async () => {
    const { a, b, key } = await failingThenServing('unsampled chat');
    const client = clientTraceparent();
    const unsampled = client.header.replace(/-01$/, '-00');

    const res = await chat(key.secret, unsampled);

    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe(b.name);
    expect(res.headers.traceresponse).toBeUndefined();
    // every attempt (a, its retry, then b) carries the client's trace, not sampled
    const upstream = [a.fake.requests[0], a.fake.requests[1], b.fake.requests[0]].map(
      (r) => r.headers.traceparent as string,
    );
    for (const value of upstream) expect(value).toMatch(new RegExp(`^00-${client.traceId}-[0-9a-f]{16}-00$`));
    // a sampled request after it is exported, so the receiver would have had this one's spans by now
    const later = await chat(key.secret);
    await serverSpanOf(later.headers['x-svc-request-id']);
    expect(receiver.spans.filter((s) => s.traceId === client.traceId)).toEqual([]);
  });

  it('names a speech attempt text_to_speech, on the Nest route', async () => {
    const [c] = pool.take(1);
    const key = await t.createKey('traced speech', [
      { provider: c.name, model: TTS_MODEL, voice_map: { '*': 'alloy' } },
    ]);

    const res = await speak(t, key.secret, { model: TTS_MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } });

    expect(res.status).toBe(200);
    const server = await serverSpanOf(res.headers.get('x-svc-request-id') ?? '');
    expect(server.attributes).toMatchObject({ 'http.route': SPEECH_PATH, 'http.response.status_code': 200 });
    const [attempt] = await clientSpansOf(server, 1);
    expect(attempt).toMatchObject({
      name: `text_to_speech ${TTS_MODEL}`,
      attributes: { 'gen_ai.operation.name': 'text_to_speech', 'gen_ai.request.model': TTS_MODEL },
    });
    expect(parseTraceparent(c.fake.requests[0].headers.traceparent)?.spanId).toBe(attempt.spanId);
  });

  it("names a MiniMax-native /v1/t2a_v2 request's attempt text_to_speech, on its own route", async () => {
    const minimax = pool.minimax('native');
    const key = await t.createKey('traced t2a', [{ provider: minimax.name, model: MINIMAX_MODEL }]);

    const res = await t.http
      .post('/v1/t2a_v2')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({
        model: MINIMAX_MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'male-qn-qingse' },
        audio_setting: { format: 'pcm', sample_rate: 16000 },
      });

    expect(res.status).toBe(200);
    expect(res.body.base_resp).toEqual({ status_code: 0, status_msg: 'success' });
    const requestId = res.headers['x-svc-request-id'];
    const server = await serverSpanOf(requestId);
    expect(server).toMatchObject({
      name: 'POST /v1/t2a_v2',
      attributes: {
        'http.request.method': 'POST',
        'http.route': '/v1/t2a_v2',
        'http.response.status_code': 200,
        'svc.request_id': requestId,
        'svc.proxy_key': key.id,
      },
    });
    const [attempt] = await clientSpansOf(server, 1);
    expect(attempt).toMatchObject({
      name: `text_to_speech ${MINIMAX_MODEL}`,
      attributes: {
        'gen_ai.operation.name': 'text_to_speech',
        'gen_ai.provider.name': 'minimax',
        'gen_ai.request.model': MINIMAX_MODEL,
        'svc.provider': minimax.name,
      },
    });
    const [call] = minimax.fake.requests.filter((r) => r.path === '/v1/t2a_v2');
    expect(parseTraceparent(call.headers.traceparent)).toEqual({ traceId: server.traceId, spanId: attempt.spanId });
  });

  it("puts a Realtime step's attempt traceparent on its WebSocket upgrade", async () => {
    const [r] = pool.take(1);
    // the Realtime upgrade beside the provider's other routes, as one OpenAI host serves both
    const realtime = await startFakeOpenAiRealtime({ host: r.fake });
    try {
      const key = await t.createKey('traced realtime', [
        { provider: r.name, model: RT_MODEL, voice_map: { '*': 'marin' } },
      ]);

      const res = await speak(t, key.secret, { model: RT_MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } });

      expect(res.status).toBe(200);
      const server = await serverSpanOf(res.headers.get('x-svc-request-id') ?? '');
      const [attempt] = await clientSpansOf(server, 1);
      expect(attempt).toMatchObject({
        name: `text_to_speech ${RT_MODEL}`,
        attributes: { 'gen_ai.operation.name': 'text_to_speech', 'svc.provider': r.name },
      });
      expect(realtime.sessions).toHaveLength(1);
      expect(parseTraceparent(realtime.sessions[0].headers.traceparent)).toEqual({
        traceId: server.traceId,
        spanId: attempt.spanId,
      });
    } finally {
      await realtime.close();
    }
  });

  it('marks the attempt that continues a broken chat stream svc.continuation, and not the broken one', async () => {
    const [a, b] = pool.take(2);
    const key = await t.createKey('traced continuation', [
      { provider: a.name, model: 'm-a' },
      { provider: b.name, model: 'm-b' },
    ]);
    // a's stream is cut after "Hello from "; b's answer starts so too, so b continues it by restart (decisions §3)
    a.fake.setMode('cutAfter', { count: 2 });

    const res = await streamChat(t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe(b.fake.replyFor('m-b'));
    expect(res.events.filter((e) => e !== '[DONE]' && 'svc_continuation' in e)).toHaveLength(1);
    const server = await serverSpanOf(res.headers.get('x-svc-request-id') ?? '');
    const attempts = await clientSpansOf(server, 2);
    const attemptOf = (provider: string) => attempts.find((s) => s.attributes['svc.provider'] === provider);
    expect(attempts).toHaveLength(2);
    expect(attemptOf(a.name)).toMatchObject({
      name: 'chat m-a',
      statusCode: 2,
      attributes: { 'svc.continuation': false, 'svc.retry': 0 },
    });
    const continuing = attemptOf(b.name);
    expect(continuing).toMatchObject({
      name: 'chat m-b',
      attributes: { 'svc.continuation': true, 'svc.retry': 0, 'svc.fallback_level': 1 },
    });
    expect(continuing?.attributes['error.type']).toBeUndefined();
    expect(parseTraceparent(b.fake.requests[0].headers.traceparent)?.spanId).toBe(continuing?.spanId);
  });

  it('records a step skipped by an open circuit as a span event, with no attempt of it', async () => {
    const { a, b, key } = await failingThenServing('traced skip');
    const post = () => chat(key.secret);
    // five failures open a's circuit (decisions §3)
    for (let i = 0; i < 5; i++) expect((await post()).status).toBe(200);

    const res = await post();

    expect(res.status).toBe(200);
    expect(a.fake.requests).toHaveLength(5);
    const server = await serverSpanOf(res.headers['x-svc-request-id']);
    expect(server.events).toEqual([
      {
        name: 'svc.step_skipped',
        attributes: expect.objectContaining({
          'svc.provider': a.name,
          'gen_ai.request.model': 'm-a',
          'svc.skip_reason': 'circuit open',
        }),
      },
    ]);
    const attempts = await clientSpansOf(server, 1);
    expect(attempts.map((s) => s.attributes['svc.provider'])).toEqual([b.name]);
  });

  it("gives each WebSocket turn a SERVER span in the upgrade's trace", async () => {
    const [g] = pool.take(1);
    const key = await t.createKey('traced stream', [
      { provider: g.name, model: TTS_MODEL, voice_map: { '*': 'alloy' } },
    ]);
    const client = clientTraceparent();
    const ws = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${key.secret}`,
      traceparent: client.header,
    });
    try {
      await ws.waitFor((m) => m.event === 'connected_success');
      ws.send({ event: 'task_start', model: TTS_MODEL, voice_setting: { voice_id: 'narrator' } });
      await ws.waitFor((m) => m.event === 'task_started');
      ws.send({ event: 'task_continue', text: TEXT });
      await ws.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
    } finally {
      ws.ws.close();
    }

    const turn = await serverSpanOf(`${String(ws.upgradeHeaders['x-svc-request-id'])}_1`);
    expect(turn).toMatchObject({
      traceId: client.traceId,
      parentSpanId: client.spanId,
      attributes: { 'http.route': '/v1/audio/speech/stream', 'svc.proxy_key': key.id },
    });
    const [attempt] = await clientSpansOf(turn, 1);
    expect(attempt.attributes['gen_ai.operation.name']).toBe('text_to_speech');
    expect(parseTraceparent(g.fake.requests[0].headers.traceparent)?.traceId).toBe(client.traceId);
  });

  it("gives an async task's chunk its own span, linked to the span of the request that created it", async () => {
    const [f] = pool.take(1);
    const key = await t.createKey('traced task', [{ provider: f.name, model: TTS_MODEL, voice_map: { '*': 'alloy' } }]);
    const client = clientTraceparent();

    const res = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${key.secret}`)
      .set('traceparent', client.header)
      .send({ model: TTS_MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } });

    expect(res.status).toBe(202);
    // the POST's own SERVER span joins the client's trace, and the task keeps its traceparent
    const post = await serverSpanOf(res.headers['x-svc-request-id']);
    expect(post).toMatchObject({
      traceId: client.traceId,
      parentSpanId: client.spanId,
      name: 'POST /v1/audio/speech/async',
    });
    const [chunk] = await receiver.waitFor(
      (s) => s.kind === SPAN_KIND.server && s.attributes['svc.request_id'] === `req_${res.body.id}_0`,
      1,
      30000,
    );
    expect(chunk.name).toBe('speech_task chunk');
    expect(chunk.traceId).not.toBe(client.traceId);
    expect(chunk.links).toEqual([{ traceId: client.traceId, spanId: post.spanId }]);
    const [attempt] = await clientSpansOf(chunk, 1);
    expect(attempt.attributes['gen_ai.operation.name']).toBe('text_to_speech');
  });

  it('exports no secret, admin token, prompt or text to speak', async () => {
    const [d, e] = pool.take(2);
    const key = await t.createKey('traced privacy', [
      { provider: d.name, model: 'm-d' },
      { provider: e.name, model: TTS_MODEL, voice_map: { '*': 'alloy' } },
    ]);
    const chat = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-d'));
    const said = await speak(t, key.secret, { model: TTS_MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } });
    expect([chat.status, said.status]).toEqual([200, 200]);
    await serverSpanOf(chat.headers['x-svc-request-id']);
    await serverSpanOf(said.headers.get('x-svc-request-id') ?? '');

    const strings = exportedStrings(receiver.spans);
    expect(strings.length).toBeGreaterThan(20);
    const reply = d.fake.replyFor('m-d');
    for (const secret of [key.secret, ADMIN_TOKEN, PROMPT, TEXT, reply])
      expect(strings.filter((s) => s.includes(secret))).toEqual([]);
  });
});

describe('traces off (no OTLP endpoint)', () => {
  let pool: ProviderPool;
  let t: TestApp;

  beforeAll(async () => {
    pool = await ProviderPool.start('tr-off', 1);
    expect(tracing.start()).toBe(false);
    t = await startApp({ gateway: pool.gateway });
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  it('sends no traceparent upstream, even when the client sent one', async () => {
    const [a] = pool.take(1);
    const key = await t.createKey('untraced', [{ provider: a.name, model: 'm-a' }]);

    const res = await t.http
      .post(CHAT_PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .set('traceparent', clientTraceparent().header)
      .send(chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(tracing.on).toBe(false);
    expect(a.fake.requests[0].headers.traceparent).toBeUndefined();
  });
});
