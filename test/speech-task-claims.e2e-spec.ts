import { DataSource } from 'typeorm';
import { runMigrationsExclusively } from '../src/database/migrate';
import { dataSourceOptions } from '../src/database/typeorm-options';
import { ENTITIES } from '../src/entities';
import { SpeechTaskEntity } from '../src/speech/tasks/speech-task.entity';
import { SpeechTasksRepository, STALE_SECONDS } from '../src/speech/tasks/speech-tasks.repository';
import { adminQuery, baseDatabaseUrl, withDatabase } from './support/database';
import { sleep } from './support/failover';

/** Which task the fair claim hands a free worker (decisions §11), on the real schema, with no worker running. */
describe('the fair claim of async speech tasks', () => {
  const name = `svc_claims_${Date.now()}_${process.pid}`;
  const admin = withDatabase(baseDatabaseUrl(), 'postgres');
  const url = withDatabase(baseDatabaseUrl(), name);
  let one: DataSource;
  /** A second replica: its own pool on the same database. */
  let two: DataSource;
  let repository: SpeechTasksRepository;
  let replica: SpeechTasksRepository;

  beforeAll(async () => {
    await adminQuery(admin, `CREATE DATABASE "${name}"`);
    one = await new DataSource(dataSourceOptions(url, { poolSize: 4 }, ENTITIES)).initialize();
    await runMigrationsExclusively(one);
    two = await new DataSource(dataSourceOptions(url, { poolSize: 4 }, ENTITIES)).initialize();
    repository = new SpeechTasksRepository(one, one.getRepository(SpeechTaskEntity));
    replica = new SpeechTasksRepository(two, two.getRepository(SpeechTaskEntity));
  });
  afterAll(async () => {
    await two?.destroy();
    await one?.destroy();
    await adminQuery(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
  beforeEach(async () => {
    await one.query(`DELETE FROM speech_tasks`);
    await one.query(`DELETE FROM proxy_keys`);
  });

  /** `n` queued tasks of key `keyId`, ids `<key>_<i>`, each created after the ones before. */
  const queue = async (keyId: string, n: number): Promise<void> => {
    await one.query(
      `INSERT INTO proxy_keys (id, name, secret_hash, secret_hint, chain) VALUES ($1, $1, $1, 'x', '[]') ON CONFLICT DO NOTHING`,
      [keyId],
    );
    for (let i = 0; i < n; i++) {
      await one.query(
        `INSERT INTO speech_tasks (id, key_id, status, model, job, plan, characters, chunks_total, created_at)
         VALUES ($1, $2, 'queued', 'speech-02-hd', '{}', '[]', 1, 1, clock_timestamp())`,
        [`${keyId}_${i}`, keyId],
      );
    }
  };
  const claim = async (from = repository, worker = 'wrk_1'): Promise<string | null> =>
    (await from.claimNext(worker))?.id ?? null;
  const keyOf = (id: string | null): string | null => id && id.split('_')[0];
  const complete = (id: string | null): Promise<unknown> =>
    one.query(`UPDATE speech_tasks SET status = 'completed' WHERE id = $1`, [id]);

  it('gives every waiting key a turn before any key gets another (round robin, not first come first served)', async () => {
    await queue('k1', 3);
    await queue('k2', 2);
    await queue('k3', 1);
    const order: Array<string | null> = [];
    // one worker: each task done before the next claim, so every key has 0 running at each claim
    for (let i = 0; i < 7; i++) {
      const id = await claim();
      order.push(keyOf(id));
      if (id) await complete(id);
    }
    expect(order).toEqual(['k1', 'k2', 'k3', 'k1', 'k2', 'k1', null]);
  });

  it("hands a free worker the first task of a key with nothing running before a busy key's backlog", async () => {
    await queue('b', 20);
    expect(keyOf(await claim())).toBe('b');
    expect(keyOf(await claim())).toBe('b');
    await queue('a', 1);
    // b has 2 running and 18 older tasks waiting: a is next all the same
    expect(await claim()).toBe('a_0');
    expect(keyOf(await claim())).toBe('b');
  });

  it('takes the oldest task of the chosen key, and takes over a task whose worker stopped beating', async () => {
    await queue('k1', 2);
    expect(await claim()).toBe('k1_0');
    await one.query(`UPDATE speech_tasks SET heartbeat_at = now() - make_interval(secs => $1) WHERE id = 'k1_0'`, [
      STALE_SECONDS + 1,
    ]);
    // the dead worker's task counts as waiting, not running, and is the key's oldest
    const taken = await replica.claimNext('wrk_2');
    expect(taken).toMatchObject({ id: 'k1_0', attempts: 2 });
  });

  it('does not claim a task that failed before its retry delay is over', async () => {
    await queue('k1', 1);
    expect(await claim()).toBe('k1_0');
    expect(
      await repository.release('k1_0', 'wrk_1', { code: 'all_providers_failed', message: 'down' }, false, undefined, 1),
    ).toBe(true);
    expect(await claim()).toBeNull();
    await sleep(1100);
    expect(await claim()).toBe('k1_0');
  });

  it('claims one task per key when workers of two replicas claim at the same moment, never one task twice', async () => {
    for (const key of ['k1', 'k2', 'k3', 'k4']) await queue(key, 2);
    const ids = await Promise.all([0, 1, 2, 3].map((i) => claim(i % 2 === 0 ? repository : replica, `wrk_${i}`)));
    expect(new Set(ids.map(keyOf))).toEqual(new Set(['k1', 'k2', 'k3', 'k4']));
    const rest = await Promise.all([0, 1, 2, 3, 4].map((i) => claim(i % 2 === 0 ? repository : replica, `wrk_${i}`)));
    const all = [...ids, ...rest].filter((id): id is string => id !== null);
    expect(all).toHaveLength(8);
    expect(new Set(all).size).toBe(8);
  });
});
