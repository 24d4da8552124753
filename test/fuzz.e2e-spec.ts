import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { tinyWav } from './support/audio';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { operationCases, operationWeight } from './support/fuzz/cases';
import { FuzzFixtures, KNOWN_OPERATIONS } from './support/fuzz/fixtures';
import { loadOperations } from './support/fuzz/openapi';
import type { Context, FuzzCase } from './support/fuzz/request';
import { FuzzClient, FuzzReport } from './support/fuzz/runner';
import { deleteKey, makeTenant, Tenant } from './support/tenants';

// `npm test` runs a seeded sample; `npm run fuzz` sets FUZZ_CASES=20000 and prints the answers by status
const CASES = Number(process.env.FUZZ_CASES ?? 2000);
const SEED = Number(process.env.FUZZ_SEED ?? 20251121);
const CONNECTIONS = 6;

const operations = loadOperations();

/** Every operation's cases. */
function allCases(fixtures: FuzzFixtures): fc.Arbitrary<FuzzCase> {
  const methodsByPath = new Map<string, string[]>();
  for (const op of operations) methodsByPath.set(op.path, [...(methodsByPath.get(op.path) ?? []), op.method]);
  return fc.oneof(
    ...operations.map((op) => {
      const known =
        (op.body === null || op.key in KNOWN_OPERATIONS) && op.pathParams.every((p) => p.name in fixtures.own);
      const ctx: Context = { op, fixtures, known, methodsOnPath: methodsByPath.get(op.path) ?? [] };
      return { arbitrary: operationCases(ctx), weight: operationWeight(op) };
    }),
  );
}

async function count(db: DataSource, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await db.query<Array<{ n: string }>>(sql, params);
  return Number(row.n);
}

describe(`generated bad input (${CASES} cases, seed ${SEED})`, () => {
  let t: TestApp;
  let db: DataSource;
  let owner: Tenant;
  let other: Tenant;
  let fixtures: FuzzFixtures;
  let started: Date;
  const report = new FuzzReport();

  beforeAll(async () => {
    t = await startApp({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true', SVC_TASK_TTL: '1h' } });
    db = t.app.get(DataSource);
    owner = await makeTenant(t, 'fuzz owner');
    other = await makeTenant(t, 'fuzz other');
    const deleted = await t.createKey('fuzz deleted');
    await deleteKey(t, ADMIN_TOKEN, deleted.id);
    const target = await t.createKey('fuzz target');
    fixtures = {
      adminToken: ADMIN_TOKEN,
      owner,
      other,
      deletedSecret: deleted.secret,
      own: { consent_id: owner.consentId, task_id: owner.taskId, webhook_id: owner.webhookId, key_id: target.id },
      foreign: { consent_id: other.consentId, task_id: other.taskId, webhook_id: other.webhookId },
      query: { request_id: owner.requestId },
      wav: tinyWav(),
    };
    started = new Date((await db.query<Array<{ now: Date }>>('SELECT now() AS now'))[0].now);
  });
  afterAll(() => t.close());

  it(
    'answers every malformed request with a 4xx in the error shape, naming the field at fault',
    async () => {
      const client = new FuzzClient(t.url, CONNECTIONS);
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(allCases(fixtures), { minLength: CONNECTIONS, maxLength: CONNECTIONS }),
            async (batch) => {
              const answers = await Promise.all(batch.map((c) => client.send(c.request).catch((err: Error) => err)));
              batch.forEach((c, i) => report.record(c, answers[i]));
            },
          ),
          { seed: SEED, numRuns: Math.ceil(CASES / CONNECTIONS) },
        );
      } finally {
        await client.close();
      }
      if (process.env.FUZZ_CASES) process.stdout.write(`\n${report.table()}\n`);
      const distinct = [...new Set(report.failures)];
      expect({ seed: SEED, failures: distinct.slice(0, 40), more: Math.max(0, distinct.length - 40) }).toEqual({
        seed: SEED,
        failures: [],
        more: 0,
      });
    },
    Math.max(240000, CASES * 120),
  );

  it('serves normal requests afterwards, and left the other key’s rows alone', async () => {
    const auth = `Bearer ${owner.secret}`;
    expect((await t.http.get(`/v1/audio/voice_consents/${owner.consentId}`).set('Authorization', auth)).status).toBe(
      200,
    );
    expect((await t.http.get('/v1/audio/voice_consents?limit=5').set('Authorization', auth)).status).toBe(200);
    const chat = await t.http
      .post('/v1/chat/completions')
      .set('Authorization', auth)
      .send({ model: 'echo-1', messages: [{ role: 'user', content: 'still there?' }] });
    expect(chat.status).toBe(200);
    expect(chat.body.provider).toBe('echo');
    const upload = await t.http
      .post('/v1/audio/voice_consents')
      .set('Authorization', auth)
      .field('language', 'de')
      .field('name', 'after the fuzz')
      .attach('recording', tinyWav(), 'a.wav');
    expect(upload.status).toBe(200);
    expect((await t.http.get('/v1/providers/health').set('Authorization', auth)).status).toBe(200);

    const theirs = `Bearer ${other.secret}`;
    expect(
      (await t.http.get(`/v1/audio/voice_consents/${other.consentId}`).set('Authorization', theirs)).body,
    ).toMatchObject({ name: 'fuzz other consent' });
    expect((await t.http.get(`/v1/user/webhooks/${other.webhookId}`).set('Authorization', theirs)).body).toMatchObject({
      url: 'http://127.0.0.1:9/fuzz-other',
      enabled: true,
    });
    expect((await t.http.get(`/v1/audio/speech/async/${other.taskId}`).set('Authorization', theirs)).status).toBe(200);
  });

  it('wrote no half rows, and a row only for each accepted create', async () => {
    const keys = [owner.id, other.id];
    // a consent is its metadata and its bytes, together
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM voice_consents c WHERE NOT EXISTS (SELECT 1 FROM consent_recordings r WHERE r.consent_id = c.id)`,
      ),
    ).toBe(0);
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM consent_recordings r JOIN voice_consents c ON c.id = r.consent_id WHERE octet_length(r.data) <> c.recording_size`,
      ),
    ).toBe(0);
    // every task has its job; every endpoint its secret
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM speech_tasks t WHERE t.key_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM pgboss.job j WHERE j.name = 'speech-tasks' AND j.data->>'taskId' = t.id)`,
        [keys],
      ),
    ).toBe(0);
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM webhook_endpoints WHERE key_id = ANY($1) AND (secret IS NULL OR secret = '')`,
        [keys],
      ),
    ).toBe(0);
    expect(
      await count(
        db,
        `SELECT count(*) AS n FROM proxy_keys WHERE secret_hash !~ '^[0-9a-f]{64}$' OR jsonb_typeof(chain) <> 'array'`,
      ),
    ).toBe(0);

    // rows of the run: the fixtures, the upload above, and one per 2xx of a create
    const accepted = (op: string): number => report.accepted.get(op) ?? 0;
    expect(await count(db, 'SELECT count(*) AS n FROM voice_consents WHERE key_id = $1', [owner.id])).toBe(
      2 + accepted('POST /v1/audio/voice_consents'),
    );
    expect(await count(db, 'SELECT count(*) AS n FROM speech_tasks WHERE key_id = $1', [owner.id])).toBe(
      1 + accepted('POST /v1/audio/speech/async'),
    );
    expect(await count(db, 'SELECT count(*) AS n FROM webhook_endpoints WHERE key_id = $1', [owner.id])).toBe(
      1 + accepted('POST /v1/user/webhooks'),
    );
    expect(
      await count(db, `SELECT count(*) AS n FROM proxy_keys WHERE name LIKE 'fuzz key%' AND created_at >= $1`, [
        started,
      ]),
    ).toBe(accepted('POST /v1/admin/keys'));
    for (const id of keys)
      expect(
        await count(db, 'SELECT count(*) AS n FROM voice_consents WHERE key_id = $1', [id]),
      ).toBeGreaterThanOrEqual(1);
  });
});
