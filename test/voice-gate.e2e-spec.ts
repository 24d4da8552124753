import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { tinyWav } from './support/audio';
import { eventually } from './support/failover';
import { speak } from './support/speech';
import { MODEL, SAMPLE, VoicesHarness } from './support/voices';
import { StreamClient, type StreamMessage } from './support/ws-client';

jest.setTimeout(120000);

const MINIMAX = 'vg-minimax';
/** A voice of the operator's MiniMax account that no consent covers (a well-formed custom id). */
const FOREIGN = 'my_cloned_narrator_01';
/** A raw id of the account the operator allow-listed. */
const ALLOWED = 'moss_audio_allowed01';
const CHAIN = [{ provider: MINIMAX, model: MODEL }];
const TEXT = 'Whose voices are these?';

type Mix = Array<{ voice_id: string; weight: number }>;

/** What a path answered: the audio was made, or the refusal as the path's client sees it. */
type Answer = { spoke: true } | { spoke: false; refusal: unknown };

/** One speech path of the gateway, driven as its clients drive it. */
interface SpeechPath {
  name: string;
  say(secret: string, mix: Mix): Promise<Answer>;
  /** What the path's client sees when the voice in `param` is refused. */
  refusal(param: string): unknown;
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The gateway's error shape: 400 voice_not_found naming the field. */
const openAiRefusal = (param: string): unknown => ({
  status: 400,
  body: { error: { code: 'voice_not_found', type: 'invalid_request_error', param } },
});

/** MiniMax's shape: HTTP 200, base_resp 2013, the message naming the gateway's code and the field. */
const miniMaxRefusal = (param: string): unknown => ({
  status: 200,
  body: {
    base_resp: {
      status_code: 2013,
      status_msg: expect.stringMatching(new RegExp(`^voice_not_found: .*${escaped(param)}`)),
    },
  },
});

/**
 * The consent gate has no side door (decisions §6): every voice id of a request, `voice_setting.voice_id` and each
 * `timbre_weights[].voice_id`, passes the same check on all seven speech paths, and a voice deleted here never
 * speaks again while its provider still holds it.
 */
describe('one voice check for every voice id', () => {
  let h: VoicesHarness;
  let mine: string;
  let theirs: string;
  let myVoice: string;
  let myUpstream: string;
  let theirVoice: string;

  const post = (path: string, secret: string, body: object): Promise<Response> =>
    fetch(`${h.t.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const request = (mix: Mix, voiceId = 'male-qn-qingse'): Record<string, unknown> => ({
    model: MODEL,
    text: TEXT,
    voice_setting: { voice_id: voiceId },
    timbre_weights: mix,
  });
  const answered = async (res: Response, ok: (body: unknown) => boolean): Promise<Answer> => {
    const text = await res.text();
    const body: unknown = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
    return ok(body) ? { spoke: true } : { spoke: false, refusal: { status: res.status, body } };
  };
  const baseRespOk = (body: unknown): boolean =>
    (body as { base_resp?: { status_code?: number } }).base_resp?.status_code === 0;

  /** A MiniMax-native T2A answer (`output_format` hex or url, or SSE). */
  const t2a =
    (extra: object) =>
    async (secret: string, mix: Mix): Promise<Answer> => {
      const res = await post('/v1/t2a_v2', secret, { ...request(mix), ...extra });
      if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
        const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
        const last = JSON.parse(events[events.length - 1].slice('data: '.length)) as { data?: { status?: number } };
        return last.data?.status === 2
          ? { spoke: true }
          : { spoke: false, refusal: { status: res.status, body: last } };
      }
      return answered(res, baseRespOk);
    };

  /** A stream task: task_start with the mix, one text, task_finish. */
  const stream =
    (path: string) =>
    async (secret: string, mix: Mix): Promise<Answer> => {
      const client = await StreamClient.connect(`${h.t.url.replace('http', 'ws')}${path}`, {
        Authorization: `Bearer ${secret}`,
      });
      try {
        client.send({ event: 'task_start', ...request(mix), text: undefined });
        const started = await client.waitFor((m) => m.event === 'task_started' || m.event === 'task_failed');
        if (started.event === 'task_failed') return { spoke: false, refusal: started };
        client.send({ event: 'task_continue', text: TEXT });
        client.send({ event: 'task_finish' });
        const end: StreamMessage = await client.waitFor(
          (m) => m.event === 'task_finished' || m.event === 'task_failed',
        );
        return end.event === 'task_finished' ? { spoke: true } : { spoke: false, refusal: end };
      } finally {
        client.ws.close();
      }
    };

  const PATHS: SpeechPath[] = [
    {
      name: '/v1/audio/speech',
      say: async (secret, mix) => {
        const res = await speak(h.t, secret, request(mix));
        if (res.status === 200) return { spoke: true };
        return { spoke: false, refusal: { status: res.status, body: JSON.parse(res.bytes.toString()) as unknown } };
      },
      refusal: openAiRefusal,
    },
    { name: '/v1/t2a_v2 (hex)', say: t2a({}), refusal: miniMaxRefusal },
    { name: '/v1/t2a_v2 (url)', say: t2a({ output_format: 'url' }), refusal: miniMaxRefusal },
    { name: '/v1/t2a_v2 (stream)', say: t2a({ stream: true }), refusal: miniMaxRefusal },
    {
      name: '/v1/audio/speech/async',
      say: async (secret, mix) => {
        const res = await post('/v1/audio/speech/async', secret, request(mix));
        if (res.status !== 202) return answered(res, () => false);
        const { id } = (await res.json()) as { id: string };
        const task = await eventually(
          async () =>
            (await (
              await fetch(`${h.t.url}/v1/audio/speech/async/${id}`, { headers: { authorization: `Bearer ${secret}` } })
            ).json()) as { status: string },
          (t) => t.status === 'completed' || t.status === 'failed',
          60000,
          'task done',
        );
        return task.status === 'completed' ? { spoke: true } : { spoke: false, refusal: task };
      },
      refusal: openAiRefusal,
    },
    {
      name: '/v1/t2a_async_v2',
      say: async (secret, mix) => {
        const res = await post('/v1/t2a_async_v2', secret, request(mix));
        const body = (await res.json()) as { task_id?: string; base_resp?: { status_code?: number } };
        if (body.base_resp?.status_code !== 0) return { spoke: false, refusal: { status: res.status, body } };
        const query = async (): Promise<{ status: string }> => {
          const answer = await fetch(`${h.t.url}/v1/query/t2a_async_query_v2?task_id=${body.task_id}`, {
            headers: { authorization: `Bearer ${secret}` },
          });
          return (await answer.json()) as { status: string };
        };
        const task = await eventually(query, (t) => t.status === 'Success' || t.status === 'Failed', 60000, 'task');
        return task.status === 'Success' ? { spoke: true } : { spoke: false, refusal: task };
      },
      refusal: miniMaxRefusal,
    },
    ...['/v1/audio/speech/stream', '/ws/v1/t2a_v2'].map(
      (path): SpeechPath => ({
        name: `WebSocket ${path}`,
        say: stream(path),
        refusal: (param) => ({
          event: 'task_failed',
          error: { code: 'voice_not_found', message: expect.stringContaining(param) },
          base_resp: { status_code: 2013 },
        }),
      }),
    ),
  ];

  /** The mixes the fake MiniMax received since the last reset, one per T2A call. */
  const mixesSent = (): unknown[] =>
    h.minimax.requests
      .filter((r) => r.path === '/v1/t2a_v2')
      .map((r) => (r.body as { timbre_weights?: unknown }).timbre_weights);

  beforeAll(async () => {
    h = await VoicesHarness.start(MINIMAX, {
      allowedVoiceIds: [ALLOWED],
      env: { SVC_VOICE_REMOVAL_RETRY_MS: '200' },
    });
    mine = await h.key('mixes mine', CHAIN);
    theirs = await h.key('mixes theirs', CHAIN);
    myVoice = (await h.cloneVoice(mine, await h.createConsent(mine))).id;
    myUpstream = await h.upstreamIdOf(myVoice);
    theirVoice = (await h.cloneVoice(theirs, await h.createConsent(theirs))).id;
  });
  afterAll(() => h.close());
  beforeEach(() => {
    h.minimax.refuseDeletes = false;
    h.minimax.reset();
  });

  describe.each(PATHS.map((p) => [p.name, p] as const))('on %s', (_, path) => {
    it('refuses a voice of the upstream account no consent covers, and sends the upstream nothing', async () => {
      const answer = await path.say(mine, [
        { voice_id: 'female-shaonv', weight: 50 },
        { voice_id: FOREIGN, weight: 50 },
      ]);
      expect(answer).toMatchObject({ spoke: false, refusal: path.refusal('timbre_weights[1].voice_id') });
      expect(h.minimax.count('/v1/t2a_v2')).toBe(0);
    });

    it("refuses another key's custom voice, and sends the upstream nothing", async () => {
      const answer = await path.say(mine, [{ voice_id: theirVoice, weight: 100 }]);
      expect(answer).toMatchObject({ spoke: false, refusal: path.refusal('timbre_weights[0].voice_id') });
      expect(h.minimax.count('/v1/t2a_v2')).toBe(0);
    });

    it('speaks a mix of a system voice and an id the operator allowed, as sent', async () => {
      const mix = [
        { voice_id: 'female-shaonv', weight: 30 },
        { voice_id: ALLOWED, weight: 70 },
      ];
      expect(await path.say(mine, mix)).toEqual({ spoke: true });
      expect(mixesSent().length).toBeGreaterThan(0);
      for (const sent of mixesSent()) expect(sent).toEqual(mix);
    });

    it("sends the key's own custom voice in a mix as its upstream id", async () => {
      const answer = await path.say(mine, [
        { voice_id: myVoice, weight: 60 },
        { voice_id: 'female-shaonv', weight: 40 },
      ]);
      expect(answer).toEqual({ spoke: true });
      expect(mixesSent().length).toBeGreaterThan(0);
      for (const sent of mixesSent())
        expect(sent).toEqual([
          { voice_id: myUpstream, weight: 60 },
          { voice_id: 'female-shaonv', weight: 40 },
        ]);
    });
  });

  describe('a voice deleted here while its provider still holds it', () => {
    it('cannot speak on any path, even where the operator names its upstream id, and its deletion is retried until done', async () => {
      const owner = await h.key('leaving voice', CHAIN);
      const consent = await h.createConsent(owner);
      const voice = (await h.cloneVoice(owner, consent)).id;
      const upstream = await h.upstreamIdOf(voice);
      // the operator's voice_map may name a raw upstream voice; while the voice exists it speaks
      const operator = await h.key('operator mapping', [
        { provider: MINIMAX, model: MODEL, voice_map: { narrator: upstream } },
      ]);
      expect((await speak(h.t, operator, request([{ voice_id: 'narrator', weight: 100 }], 'narrator'))).status).toBe(
        200,
      );
      expect(h.lastT2aVoice()).toBe(upstream);

      h.minimax.refuseDeletes = true;
      expect((await h.deleteVoice(owner, voice)).status).toBe(200);
      expect(h.minimax.count('/v1/delete_voice')).toBe(1);
      expect(h.minimax.voices.has(upstream)).toBe(true);
      // the voice is gone here, so its consent is free; the removal upstream does not depend on it
      expect((await h.deleteConsent(owner, consent)).status).toBe(200);

      h.minimax.reset();
      for (const path of PATHS) {
        const answer = await path.say(operator, [
          { voice_id: 'female-shaonv', weight: 50 },
          { voice_id: 'narrator', weight: 50 },
        ]);
        expect({ path: path.name, answer }).toMatchObject({
          path: path.name,
          answer: { spoke: false, refusal: path.refusal('timbre_weights[1].voice_id') },
        });
      }
      const named = await speak(h.t, operator, request([{ voice_id: 'female-shaonv', weight: 100 }], 'narrator'));
      expect({ status: named.status, body: JSON.parse(named.bytes.toString()) as unknown }).toMatchObject(
        openAiRefusal('voice_setting.voice_id') as object,
      );
      const own = await speak(h.t, owner, request([{ voice_id: 'female-shaonv', weight: 100 }], voice));
      expect(own.status).toBe(400);
      expect(h.minimax.count('/v1/t2a_v2')).toBe(0);

      // tried again (with backoff) while the provider refuses, until it accepts
      await h.minimax.waitUntil(() => h.minimax.count('/v1/delete_voice') >= 2, 20000);
      expect(h.minimax.voices.has(upstream)).toBe(true);
      h.minimax.refuseDeletes = false;
      await h.minimax.waitUntil(() => !h.minimax.voices.has(upstream), 20000);
      await eventually(
        () => h.db.query('SELECT 1 FROM voice_removals WHERE upstream_voice_id = $1', [upstream]),
        (rows: unknown[]) => rows.length === 0,
        5000,
        'removal record gone',
      );
    });

    it('stops an open stream that speaks it at its next text', async () => {
      const owner = await h.key('streaming voice', CHAIN);
      const voice = (await h.cloneVoice(owner, await h.createConsent(owner))).id;
      const client = await StreamClient.connect(`${h.t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
        Authorization: `Bearer ${owner}`,
      });
      try {
        client.send({
          event: 'task_start',
          model: MODEL,
          voice_setting: { voice_id: 'male-qn-qingse' },
          timbre_weights: [{ voice_id: voice, weight: 100 }],
        });
        await client.waitFor((m) => m.event === 'task_started');
        client.send({ event: 'task_continue', text: 'Said while the voice exists.' });
        await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
        expect(h.minimax.count('/v1/t2a_v2')).toBe(1);
        h.minimax.refuseDeletes = true;
        expect((await h.deleteVoice(owner, voice)).status).toBe(200);
        client.send({ event: 'task_continue', text: 'Never said.' });
        expect(await client.waitFor((m) => m.event === 'task_failed')).toMatchObject({
          error: { code: 'voice_not_found', message: expect.stringContaining('timbre_weights[0].voice_id') },
        });
        expect(h.minimax.count('/v1/t2a_v2')).toBe(1);
      } finally {
        client.ws.close();
      }
    });

    it("removes a deleted key's voices at their provider", async () => {
      const key = await h.t.createKey('leaving key', CHAIN);
      const voice = await h.cloneVoice(key.secret, await h.createConsent(key.secret));
      const upstream = await h.upstreamIdOf(voice.id);
      expect(h.minimax.voices.has(upstream)).toBe(true);
      const removed = await h.t.http.delete(`/v1/admin/keys/${key.id}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      expect(removed.status).toBe(200);
      await h.minimax.waitUntil(() => !h.minimax.voices.has(upstream), 20000);
    });
  });
});

/** A fallback step that does not hold a custom voice of the mix: it maps it (voice_map) or leaves it out. */
describe('a voice mix on a fallback step', () => {
  let t: TestApp;
  let holder: FakeMiniMax;
  let fallback: FakeMiniMax;
  let secret: string;
  let voice: string;
  let upstream: string;

  beforeAll(async () => {
    [holder, fallback] = await Promise.all([
      startFakeMiniMax({ name: 'vg-holder' }),
      startFakeMiniMax({ name: 'vg-fallback' }),
    ]);
    const provider = (name: string, fake: FakeMiniMax): string =>
      `  - { name: ${name}, kind: minimax, base_url: "${fake.url}", api_key: k }`;
    t = await startApp({
      gateway: parseGatewayConfig(
        ['providers:', provider('vg-holder', holder), provider('vg-fallback', fallback)].join('\n'),
        'voice mix fallback test',
      ),
    });
    secret = (
      await t.createKey('mix fallback', [
        { provider: 'vg-holder', model: MODEL },
        { provider: 'vg-fallback', model: MODEL },
      ])
    ).secret;
    const auth = { Authorization: `Bearer ${secret}` };
    const consent = await t.http
      .post('/v1/audio/voice_consents')
      .set(auth)
      .attach('recording', tinyWav(), 'consent.wav')
      .field('language', 'en-US')
      .field('name', 'Ada');
    const cloned = await t.http
      .post('/v1/audio/voices')
      .set(auth)
      .field('name', 'Ada clone')
      .field('consent', consent.body.id as string)
      .attach('audio_sample', SAMPLE, 'sample.wav');
    expect(cloned.body).toMatchObject({ provider: 'vg-holder' });
    voice = cloned.body.id as string;
    upstream = (holder.requests.find((r) => r.path === '/v1/voice_clone')?.body as { voice_id: string }).voice_id;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([holder.close(), fallback.close()]);
  });
  beforeEach(() => {
    holder.setMode('http500');
    holder.reset();
    fallback.reset();
  });

  const sentTo = (fake: FakeMiniMax): Array<Record<string, unknown>> =>
    fake.requests.filter((r) => r.path === '/v1/t2a_v2').map((r) => r.body as Record<string, unknown>);
  const say = (mix: Mix): ReturnType<typeof speak> =>
    speak(t, secret, { model: MODEL, text: TEXT, voice_setting: { voice_id: 'male-qn-qingse' }, timbre_weights: mix });

  it('leaves the custom voice out of the mix it does not hold, and sends the rest', async () => {
    const res = await say([
      { voice_id: voice, weight: 60 },
      { voice_id: 'female-shaonv', weight: 40 },
    ]);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe('vg-fallback');
    expect((sentTo(holder)[0] as { timbre_weights: unknown }).timbre_weights).toEqual([
      { voice_id: upstream, weight: 60 },
      { voice_id: 'female-shaonv', weight: 40 },
    ]);
    expect(sentTo(fallback)).toHaveLength(1);
    expect(sentTo(fallback)[0].timbre_weights).toEqual([{ voice_id: 'female-shaonv', weight: 40 }]);
    expect(JSON.stringify(sentTo(fallback))).not.toContain(upstream);
  });

  it('sends no mix when nothing of it is left, and speaks voice_setting.voice_id', async () => {
    const res = await say([{ voice_id: voice, weight: 100 }]);
    expect(res.status).toBe(200);
    expect(sentTo(fallback)).toHaveLength(1);
    expect(sentTo(fallback)[0]).not.toHaveProperty('timbre_weights');
    expect(sentTo(fallback)[0]).toMatchObject({ voice_setting: { voice_id: 'male-qn-qingse' } });
  });
});
