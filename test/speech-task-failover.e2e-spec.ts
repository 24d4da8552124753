import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { eventually } from './support/failover';
import { isolatedDatabase } from './support/receiver';

// real synthesis of a few thousand characters by the offline engine
jest.setTimeout(120000);

const SENTENCE = 'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more. ';

/** An async task is one request to its client, however many chunks it is cut into (decisions §7). */
describe('async speech task failover', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let db: DataSource;
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ mode: 'http500' });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: tf-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`,
      'task failover test',
    );
    // a database of its own: on the shared one, a worker of another file's app (another gateway configuration) could take these tasks
    database = await isolatedDatabase('task_failover');
    // a short pin wait: a chunk the pinned step fails moves the rest of the task on after it (decisions §7)
    t = await startApp({ gateway, env: { DATABASE_URL: database.url, SVC_TASK_PIN_WAIT_MS: '1500' } });
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
    await minimax?.close();
    await database?.drop();
  });

  interface TaskRecord {
    status: string;
    provider: string | null;
    fallback_level: number | null;
    voice_switches: Array<{ chunk: number; from: { provider: string }; to: { provider: string } }>;
  }

  /** A key whose chain is the fake MiniMax, then espeak (each with a voice of its own). */
  const failoverKey = (name: string) =>
    t.createKey(name, [
      { provider: 'tf-minimax', model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      { provider: 'espeak', model: 'speech-02-hd', voice_map: { '*': 'en-us' } },
    ]);

  /** Submits `text` as an async task and waits until it is completed or failed. */
  async function runTask(secret: string, text: string): Promise<TaskRecord> {
    const auth = ['Authorization', `Bearer ${secret}`] as const;
    const submitted = await t.http
      .post('/v1/audio/speech/async')
      .set(...auth)
      .send({ model: 'speech-02-hd', text, voice_setting: { voice_id: 'narrator' } });
    expect(submitted.status).toBe(202);
    const status = (): Promise<TaskRecord> =>
      t.http
        .get(`/v1/audio/speech/async/${submitted.body.id as string}`)
        .set(...auth)
        .then((res) => res.body as TaskRecord);
    return eventually(status, (task) => ['completed', 'failed'].includes(task.status), 90000, 'the task to finish');
  }

  it('stores one failover event for a task whose every chunk was spoken by the fallback, not one per chunk', async () => {
    const key = await failoverKey('task failover');
    const done = await runTask(key.secret, SENTENCE.repeat(14).trim()); // about 1,200 characters: two chunks
    // the first chunk fell back, so espeak is the task's voice from the start: no switch
    expect(done).toMatchObject({ status: 'completed', provider: 'espeak', fallback_level: 1, voice_switches: [] });

    const chunkCalls = await eventually(
      () =>
        db.query<Array<{ fallback_level: number }>>(`SELECT fallback_level FROM usage_records WHERE key_id = $1`, [
          key.id,
        ]),
      (rows) => rows.length >= 2,
      5000,
      'the usage records of the chunks',
    );
    expect(chunkCalls.every((r) => r.fallback_level === 1)).toBe(true);
    // only the first chunk walked the chain (its 500 retried once on the step, decisions §3): the second went to
    // the task's pinned voice, espeak, at once
    expect(minimax.count('/v1/t2a_v2')).toBe(2);
    const events = await db.query<Array<{ data: Record<string, unknown> }>>(
      `SELECT data FROM gateway_events WHERE key_id = $1 AND type = 'failover'`,
      [key.id],
    );
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ exhausted_provider: 'tf-minimax', active_provider: 'espeak', fallback_level: 1 }),
    ]);
  });

  it('names the deepest step that served any chunk, so a task that switched voice part-way does not report level 0', async () => {
    minimax.setMode('ok');
    minimax.failText = /Tuesday/;
    try {
      const key = await failoverKey('task part failover');
      // chunks of at most 1,000 characters: the first of eleven plain sentences, the other two of sentences naming
      // Tuesday (the pinned step fails those: after the pin wait the task goes on with espeak from chunk 1)
      const text =
        `${SENTENCE.repeat(11)}${'On Tuesday the keeper climbed the stairs again and checked the lamp twice. '.repeat(20)}`.trim();
      expect(await runTask(key.secret, text)).toMatchObject({
        status: 'completed',
        provider: 'espeak',
        fallback_level: 1,
        voice_switches: [
          expect.objectContaining({
            chunk: 1,
            from: expect.objectContaining({ provider: 'tf-minimax' }),
            to: expect.objectContaining({ provider: 'espeak' }),
          }),
        ],
      });
      // the chunks' own calls, as their usage records tell (request ids req_<task>_<idx>)
      const chunks = await eventually(
        () =>
          db.query<Array<{ provider: string; fallback_level: number }>>(
            `SELECT provider, fallback_level FROM usage_records WHERE key_id = $1 AND status = 200 ORDER BY request_id`,
            [key.id],
          ),
        (rows) => rows.length === 3,
        5000,
        'the usage records of the three chunks',
      );
      expect(chunks.map((c) => [c.provider, c.fallback_level])).toEqual([
        ['tf-minimax', 0],
        ['espeak', 1],
        ['espeak', 1],
      ]);
    } finally {
      minimax.failText = null;
      minimax.setMode('http500');
    }
  });
});
