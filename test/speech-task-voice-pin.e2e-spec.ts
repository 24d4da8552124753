import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { isolatedDatabase } from './support/receiver';
import {
  CHUNK_3,
  CHUNKS,
  chunksSpokenBy,
  FALLBACK_VOICE,
  finished,
  MODEL,
  pinGateway,
  pinKey,
  PRIMARY_VOICE,
  submitTask,
  TASK_BODY,
} from './support/voice-pin';

jest.setTimeout(120000);

/** How long a chunk's pinned step may fail before the task moves on, here (2 min by default). */
const PIN_WAIT_MS = 2500;

/** An async task speaks with one voice (decisions §7): its chunks stay on the step of its first chunk. */
describe('async speech task voice pin', () => {
  let t: TestApp;
  let a: FakeMiniMax;
  let b: FakeMiniMax;
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    [a, b] = await Promise.all([startFakeMiniMax({ name: 'mm-a' }), startFakeMiniMax({ name: 'mm-b' })]);
    // a database of its own: a worker of another file's app (another gateway configuration) could take these tasks
    database = await isolatedDatabase('voice_pin');
    t = await startApp({
      gateway: pinGateway(a, b),
      // the pin's own waits are under test, not the breaker: a chunk failing for the whole wait (each attempt and
      // its same-step retry, decisions §3) would otherwise open mm-a's circuit and the next test's first chunk skip it
      env: { DATABASE_URL: database.url, SVC_TASK_PIN_WAIT_MS: String(PIN_WAIT_MS), SVC_BREAKER_THRESHOLD: '1000' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([a?.close(), b?.close()]);
    await database?.drop();
  });
  beforeEach(() => {
    a.reset();
    b.reset();
    a.failText = null;
    a.failTextTimes = null;
  });

  it('cuts the test text into six chunks, the fourth (chunk 3) the one that names Delta', () => {
    expect(CHUNKS).toHaveLength(6);
    expect(CHUNKS.map((c) => CHUNK_3.test(c))).toEqual([false, false, false, true, false, false]);
  });

  it('retries a chunk its step failed once on the same step: no switch, the whole file one provider', async () => {
    a.failText = CHUNK_3;
    a.failTextTimes = 1;
    const key = await pinKey(t, 'pin blip');
    const id = await submitTask(t, key.secret);
    expect(await finished(t, key.secret, id)).toMatchObject({
      status: 'completed',
      provider: 'mm-a',
      fallback_level: 0,
      voice_switches: [],
    });
    const spoken = chunksSpokenBy(a);
    expect([...new Set(spoken)].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(spoken.filter((c) => c === 3)).toHaveLength(2);
    expect(chunksSpokenBy(b)).toEqual([]);
  });

  it('moves on to the next step after the pin wait, lists the switch, and speaks every later chunk there', async () => {
    a.failText = CHUNK_3;
    const key = await pinKey(t, 'pin outage');
    // the MiniMax-native route creates the same task; its query answer lists the switches too
    const created = await t.http
      .post('/v1/t2a_async_v2')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ ...TASK_BODY, voice_switch: 'allowed' });
    expect(created.body).toMatchObject({ base_resp: { status_code: 0 } });
    const id = created.body.task_id as string;
    const started = Date.now();
    const done = await finished(t, key.secret, id);
    expect(done).toMatchObject({ error: null, status: 'completed', provider: 'mm-b', fallback_level: 1 });
    expect(done.voice_switches).toEqual([
      {
        chunk: 3,
        from: { provider: 'mm-a', voice: PRIMARY_VOICE },
        to: { provider: 'mm-b', voice: FALLBACK_VOICE },
        at: expect.any(Number),
        reason: expect.stringContaining('mm-a'),
      },
    ]);
    // not before the pinned step had failed the chunk for the whole wait
    expect(Date.now() - started).toBeGreaterThanOrEqual(PIN_WAIT_MS);
    // retried on mm-a with waits (1 s, then up to the wait's end), never spoken by it
    expect(chunksSpokenBy(a).filter((c) => c === 3).length).toBeGreaterThanOrEqual(2);
    // the fallback spoke chunk 3 and every later one, and none before it
    expect([...new Set(chunksSpokenBy(b))].sort()).toEqual([3, 4, 5]);

    const query = await t.http
      .get(`/v1/query/t2a_async_query_v2?task_id=${id}`)
      .set('Authorization', `Bearer ${key.secret}`);
    expect(query.body).toMatchObject({ status: 'Success', voice_switches: done.voice_switches });
  });

  it('fails a task created with voice_switch "never" with voice_unavailable once the pin wait is over', async () => {
    a.failText = CHUNK_3;
    const key = await pinKey(t, 'pin never');
    const id = await submitTask(t, key.secret, { voice_switch: 'never' });
    const done = await finished(t, key.secret, id);
    expect(done).toMatchObject({ status: 'failed', voice_switches: [], error: { code: 'voice_unavailable' } });
    expect(done.error?.message).toMatch(/mm-a/);
    expect(chunksSpokenBy(a).filter((c) => c === 3).length).toBeGreaterThanOrEqual(2);
    expect(chunksSpokenBy(b)).toEqual([]);
  });

  it.each([
    ['/v1/audio/speech/async', 'sometimes'],
    ['/v1/audio/speech/async', true],
  ])('refuses %s with voice_switch %j: 400 naming the field', async (path, value) => {
    const key = await pinKey(t, 'pin bad input');
    const res = await t.http
      .post(path)
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ model: MODEL, text: 'Hello there.', voice_switch: value });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_value',
      param: 'voice_switch',
    });
    expect(res.body.error.message).toMatch(/voice_switch/);
  });

  it("refuses voice_switch on MiniMax's async route in MiniMax's shape", async () => {
    const key = await pinKey(t, 'pin bad native input');
    const res = await t.http
      .post('/v1/t2a_async_v2')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ model: MODEL, text: 'Hello there.', voice_switch: 'sometimes' });
    expect(res.body.base_resp).toMatchObject({ status_code: 2013 });
    expect(res.body.base_resp.status_msg).toMatch(/voice_switch/);
  });
});
