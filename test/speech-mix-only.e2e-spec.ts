import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const T2A = '/v1/t2a_v2';
const MIX = [
  { voice_id: 'female-shaonv', weight: 30 },
  { voice_id: 'English_Graceful_Lady', weight: 70 },
];

interface MiniMaxAnswer {
  task_id?: string;
  base_resp: { status_code: number; status_msg: string };
}

/**
 * A MiniMax mix given by `timbre_weights` alone (decisions §10): no `voice_setting.voice_id`, every mixed voice
 * through the one voice check, a MiniMax step sent the mix and no invented voice_id; neither → the field named.
 */
describe('a MiniMax mix without voice_setting.voice_id', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let openai: FakeOpenAi;
  let secret: string;
  let openaiSecret: string;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'mix-minimax' });
    openai = await startFakeOpenAi({ name: 'mix-openai' });
    const gateway = parseGatewayConfig(
      [
        'providers:',
        `  - { name: mix-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }`,
        `  - { name: mix-openai, kind: openai, base_url: "${openai.url}", api_key: k }`,
      ].join('\n'),
      'mix-only test',
    );
    t = await startApp({ gateway });
    secret = (await t.createKey('mix only', [{ provider: 'mix-minimax', model: MODEL }])).secret;
    openaiSecret = (await t.createKey('mix on openai', [{ provider: 'mix-openai', model: MODEL }])).secret;
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
    await openai.close();
  });
  beforeEach(() => {
    minimax.reset();
    openai.reset();
  });

  const post = async (path: string, body: Record<string, unknown>): Promise<MiniMaxAnswer> =>
    (await (
      await fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json()) as MiniMaxAnswer;
  const sentToMiniMax = (): Array<Record<string, unknown>> =>
    minimax.requests.filter((r) => r.path === T2A).map((r) => r.body as Record<string, unknown>);

  it('speaks on /v1/t2a_v2 with the mix alone: MiniMax gets the timbre_weights and no voice_id', async () => {
    const answer = await post(T2A, {
      model: MODEL,
      text: 'A mix.',
      timbre_weights: MIX,
      voice_setting: { speed: 1.1 },
    });

    expect(answer.base_resp.status_code).toBe(0);
    const sent = sentToMiniMax();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ timbre_weights: MIX, voice_setting: { speed: 1.1 } });
    expect(sent[0].voice_setting).not.toHaveProperty('voice_id');
  });

  it('runs an async task (/v1/t2a_async_v2) with the mix alone and no voice_setting at all', async () => {
    const submit = await post('/v1/t2a_async_v2', { model: MODEL, text: 'A mix, later.', timbre_weights: MIX });
    expect(submit.base_resp.status_code).toBe(0);

    let status = '';
    for (let i = 0; i < 300 && status !== 'Success' && status !== 'Failed'; i++) {
      const query = await fetch(`${t.url}/v1/query/t2a_async_query_v2?task_id=${submit.task_id}`, {
        headers: { Authorization: `Bearer ${secret}` },
      });
      status = ((await query.json()) as { status: string }).status;
      if (status !== 'Success') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe('Success');
    const sent = sentToMiniMax();
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent) {
      expect(body).toMatchObject({ timbre_weights: MIX });
      expect(body.voice_setting).not.toHaveProperty('voice_id');
    }
  });

  it('still refuses a voice of the mix that the step cannot speak, naming it, before any upstream call', async () => {
    const answer = await post(T2A, {
      model: MODEL,
      text: 'A mix.',
      timbre_weights: [MIX[0], { voice_id: 'voice_not_this_keys', weight: 70 }],
    });

    expect(answer.base_resp.status_code).toBe(2013);
    expect(answer.base_resp.status_msg).toMatch(/^voice_not_found: .*timbre_weights\[1\]\.voice_id/);
    expect(sentToMiniMax()).toHaveLength(0);
  });

  it.each([
    ['voice_setting without voice_id', { voice_setting: { speed: 1 } }, 'voice_setting.voice_id'],
    ['no voice_setting', {}, 'voice_setting'],
  ])(
    'answers 2013 naming the field when neither voice_id nor timbre_weights is given (%s)',
    async (_, extra, field) => {
      const answer = await post(T2A, { model: MODEL, text: 'No voice.', ...extra });

      expect(answer.base_resp.status_code).toBe(2013);
      expect(answer.base_resp.status_msg).toContain(field);
      expect(sentToMiniMax()).toHaveLength(0);
    },
  );

  it('answers 400 missing_field on /v1/audio/speech/async for voice_setting without voice_id and no mix', async () => {
    const res = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({ model: MODEL, text: 'No voice.', voice_setting: { speed: 1 } });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'missing_field', param: 'voice_setting.voice_id' });
  });

  it('speaks the heaviest voice of the mix on a step that cannot mix, and names timbre_weights as ignored', async () => {
    const res = await t.http
      .post(T2A)
      .set('Authorization', `Bearer ${openaiSecret}`)
      .send({
        model: MODEL,
        text: 'A mix, on OpenAI.',
        timbre_weights: [
          { voice_id: 'alloy', weight: 30 },
          { voice_id: 'marin', weight: 70 },
          { voice_id: 'cedar', weight: 70 },
        ],
      });

    expect((res.body as MiniMaxAnswer).base_resp.status_code).toBe(0);
    const sent = openai.requests.filter((r) => r.path === '/v1/audio/speech').map((r) => r.body as { voice: string });
    expect(sent).toEqual([expect.objectContaining({ voice: 'marin' })]);
    expect(sent[0]).not.toHaveProperty('timbre_weights');
    expect(res.headers['x-svc-ignored-fields']).toContain('timbre_weights');
  });
});
