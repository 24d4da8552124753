import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { EnvironmentVariables } from '../src/config/env.schema';
import { StorageSpace } from '../src/database/storage-space';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { tinyWav } from './support/audio';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const MINIMAX = 'quota-minimax';

/** Settings these tests set, cleared after each app so the next test file boots with the defaults. */
const QUOTA_ENV = {
  SVC_QUOTA_PENDING_UPLOADS: '3',
  SVC_QUOTA_PENDING_UPLOAD_BYTES: '100000',
  SVC_QUOTA_CONSENTS: '2',
  SVC_QUOTA_AUDIO_LINKS: '2',
};

interface BaseRespAnswer {
  base_resp: { status_code: number; status_msg: string };
  file?: { file_id: number; bytes: number };
  data?: { audio: string };
}

/** A gateway whose key chains speak through a recording fake MiniMax. */
async function boot(env: Record<string, string>): Promise<{ t: TestApp; minimax: FakeMiniMax }> {
  const minimax = await startFakeMiniMax({ name: MINIMAX });
  const gateway = parseGatewayConfig(
    `providers:\n  - { name: ${MINIMAX}, kind: minimax, base_url: "${minimax.url}", api_key: k }\n`,
    'storage quotas test',
  );
  const t = await startApp({ gateway, env });
  return { t, minimax };
}

async function shutDown(t: TestApp | undefined, minimax: FakeMiniMax | undefined, env: object): Promise<void> {
  await t?.close();
  await minimax?.close();
  for (const name of Object.keys(env)) delete process.env[name];
}

/** The operations that store data, for a key: each answers as its route answers. */
function storing(t: TestApp) {
  const upload = async (secret: string, bytes = 1000): Promise<BaseRespAnswer> => {
    const form = new FormData();
    form.append('purpose', 'voice_clone');
    form.append('file', new Blob([new Uint8Array(bytes)]), 'sample.wav');
    const res = await fetch(`${t.url}/v1/files/upload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}` },
      body: form,
    });
    // MiniMax's shape: HTTP 200, the error in base_resp
    expect(res.status).toBe(200);
    return (await res.json()) as BaseRespAnswer;
  };
  const consent = (secret: string) =>
    t.http
      .post('/v1/audio/voice_consents')
      .set('Authorization', `Bearer ${secret}`)
      .field('name', 'narrator')
      .field('language', 'en-US')
      .attach('recording', tinyWav(), 'consent.wav');
  const link = async (secret: string): Promise<BaseRespAnswer> => {
    const res = await fetch(`${t.url}/v1/t2a_v2`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        text: 'A link, please.',
        voice_setting: { voice_id: 'male-qn-qingse' },
        output_format: 'url',
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as BaseRespAnswer;
  };
  return { upload, consent, link };
}

const chain = [{ provider: MINIMAX, model: MODEL }];

describe('storage quotas per key (429 quota_exceeded, MiniMax 1002 on the native routes)', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let ops: ReturnType<typeof storing>;
  const key = async (name: string): Promise<string> => (await t.createKey(name, chain)).secret;

  beforeAll(async () => {
    ({ t, minimax } = await boot(QUOTA_ENV));
    ops = storing(t);
  });
  afterAll(() => shutDown(t, minimax, QUOTA_ENV));

  it('refuses the upload past SVC_QUOTA_PENDING_UPLOADS in MiniMax shape; another key still uploads', async () => {
    const a = await key('uploads a');
    for (let i = 0; i < 3; i++) expect((await ops.upload(a)).base_resp.status_code).toBe(0);
    const refused = await ops.upload(a);
    expect(refused.base_resp.status_code).toBe(1002);
    expect(refused.base_resp.status_msg).toMatch(/^quota_exceeded: .*3 pending uploads.*SVC_QUOTA_PENDING_UPLOADS/);
    expect(refused.file).toBeUndefined();
    expect((await ops.upload(await key('uploads b'))).base_resp.status_code).toBe(0);
  });

  it('counts only pending uploads: one that expired frees its place', async () => {
    const a = await key('uploads expire');
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ops.upload(a)).file!.file_id);
    expect((await ops.upload(a)).base_resp.status_code).toBe(1002);
    await t.app
      .get(DataSource)
      .query(`UPDATE minimax_files SET expires_at = now() - interval '1 second' WHERE id = $1`, [ids[0]]);
    expect((await ops.upload(a)).base_resp.status_code).toBe(0);
  });

  it('refuses the upload that would pass SVC_QUOTA_PENDING_UPLOAD_BYTES', async () => {
    const a = await key('upload bytes');
    expect((await ops.upload(a, 60000)).base_resp.status_code).toBe(0);
    const refused = await ops.upload(a, 60000);
    expect(refused.base_resp.status_code).toBe(1002);
    expect(refused.base_resp.status_msg).toMatch(/^quota_exceeded: .*100000 bytes.*SVC_QUOTA_PENDING_UPLOAD_BYTES/);
    // a smaller one still fits
    expect((await ops.upload(a, 30000)).base_resp.status_code).toBe(0);
  });

  it('lets no burst of concurrent uploads past the quota', async () => {
    const a = await key('upload burst');
    const answers = await Promise.all(Array.from({ length: 10 }, () => ops.upload(a)));
    const codes = answers.map((answer) => answer.base_resp.status_code).sort();
    expect(codes).toEqual([0, 0, 0, 1002, 1002, 1002, 1002, 1002, 1002, 1002]);
  });

  it('refuses the consent past SVC_QUOTA_CONSENTS with 429 quota_exceeded; another key, and a freed place, still create', async () => {
    const a = await key('consents a');
    const first = await ops.consent(a);
    expect(first.status).toBe(200);
    expect((await ops.consent(a)).status).toBe(200);
    const refused = await ops.consent(a);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'quota_exceeded', param: null });
    expect(refused.body.error.message).toMatch(/2 voice consents.*SVC_QUOTA_CONSENTS/);
    expect((await ops.consent(await key('consents b'))).status).toBe(200);
    const body = first.body as { id: string };
    await t.http.delete(`/v1/audio/voice_consents/${body.id}`).set('Authorization', `Bearer ${a}`).expect(200);
    expect((await ops.consent(a)).status).toBe(200);
  });

  it('lets no burst of concurrent consents past the quota', async () => {
    const a = await key('consent burst');
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => ops.consent(a)))).map((r) => r.status);
    expect(statuses.sort()).toEqual([200, 200, 429, 429, 429, 429]);
  });

  it('refuses the audio link past SVC_QUOTA_AUDIO_LINKS before any provider is called; another key still gets links', async () => {
    const a = await key('links a');
    for (let i = 0; i < 2; i++) {
      const answer = await ops.link(a);
      expect(answer.base_resp.status_code).toBe(0);
      expect(answer.data?.audio).toMatch(/\/v1\/t2a_v2\/audio\//);
    }
    const calls = minimax.count('/v1/t2a_v2');
    const refused = await ops.link(a);
    expect(refused.base_resp.status_code).toBe(1002);
    expect(refused.base_resp.status_msg).toMatch(/^quota_exceeded: .*2 live audio links.*SVC_QUOTA_AUDIO_LINKS/);
    expect(minimax.count('/v1/t2a_v2')).toBe(calls);
    expect((await ops.link(await key('links b'))).base_resp.status_code).toBe(0);
  });
});

describe('the free-space guard (507 insufficient_storage before the database runs out)', () => {
  // any database is larger than one byte: every stored-data write is refused from the first sample on
  const env = { SVC_STORAGE_BUDGET_BYTES: '1' };
  let t: TestApp;
  let minimax: FakeMiniMax;
  let ops: ReturnType<typeof storing>;
  let secret: string;

  beforeAll(async () => {
    ({ t, minimax } = await boot(env));
    ops = storing(t);
    secret = (await t.createKey('guarded', chain)).secret;
  });
  afterAll(() => shutDown(t, minimax, env));

  it('refuses consents and async tasks with 507, and uploads and links in MiniMax shape, calling no provider', async () => {
    const consent = await ops.consent(secret);
    expect(consent.status).toBe(507);
    expect(consent.body.error).toMatchObject({ type: 'api_error', code: 'insufficient_storage' });
    expect(consent.body.error.message).toMatch(/SVC_STORAGE_BUDGET_BYTES/);

    const task = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({ model: MODEL, text: 'Stored later.', voice_setting: { voice_id: 'male-qn-qingse' } });
    expect(task.status).toBe(507);
    expect(task.body.error.code).toBe('insufficient_storage');

    const upload = await ops.upload(secret);
    expect(upload.base_resp.status_code).toBe(1000);
    expect(upload.base_resp.status_msg).toMatch(/^insufficient_storage: /);
    const link = await ops.link(secret);
    expect(link.base_resp.status_msg).toMatch(/^insufficient_storage: /);
    expect(minimax.count('/v1/t2a_v2')).toBe(0);
  });

  it('keeps serving what stores nothing: reads and hex speech', async () => {
    await t.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${secret}`).expect(200);
    const res = await fetch(`${t.url}/v1/t2a_v2`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: MODEL, text: 'Not stored.', voice_setting: { voice_id: 'male-qn-qingse' } }),
    });
    expect(((await res.json()) as BaseRespAnswer).base_resp.status_code).toBe(0);
  });

  it('accepts writes again from the first sample that finds room', async () => {
    t.app.get(EnvironmentVariables).SVC_STORAGE_BUDGET_BYTES = 1e15;
    await t.app.get(StorageSpace).sample();
    expect((await ops.consent(secret)).status).toBe(200);
    expect((await ops.upload(secret)).base_resp.status_code).toBe(0);
  });
});
