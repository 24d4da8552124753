import { Client } from 'pg';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { adminQuery, withDatabase } from './support/database';
import { eventually } from './support/failover';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const VOICE = 'English_Graceful_Lady';
/** Every synthesis call of the fake provider takes this long: a 6,000-character task (6 chunks, 2 at a time) about 1.5 s. */
const CALL_MS = 500;
const B_TASKS = 20;
/** pg-boss's poll: a worker that was idle looks for a job about once a second. */
const POLL_SLACK_MS = 1000;

const SENTENCES = [
  'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more.',
  'Rain drummed on the tin roof while the children counted the seconds between thunder and lightning!',
  'Markets opened slowly; traders watched the screens, sipped coffee and waited for news.',
];
const longText = (label: string, chars: number): string => {
  let text = `Task ${label} begins.`;
  for (let i = 0; text.length < chars; i++) text += ` ${SENTENCES[i % SENTENCES.length]} Part ${i + 1} of ${label}.`;
  return text;
};

interface Row {
  id: string;
  key_id: string;
  status: string;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** Async speech tasks are claimed fairly across keys, on every replica (decisions §11). */
describe('fair async scheduling across keys', () => {
  // a database of its own: the task workers of other test files' apps (same run database) must not take these tasks
  const base = process.env.SVC_TEST_BASE_DATABASE_URL ?? process.env.DATABASE_URL ?? '';
  const databaseName = `svc_test_fair_${Date.now()}_${process.pid}`;
  const databaseUrl = withDatabase(base, databaseName);
  let minimax: FakeMiniMax;
  let db: Client;
  const replicas: TestApp[] = [];

  beforeAll(async () => {
    await adminQuery(base, `CREATE DATABASE "${databaseName}"`);
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
    minimax = await startFakeMiniMax({ name: 'fair-minimax' });
    const gateway = parseGatewayConfig(
      `providers:\n  - name: fair-minimax\n    kind: minimax\n    base_url: ${minimax.url}\n    api_key: x\n`,
      'fairness test gateway',
    );
    // two replicas on one database: 4 workers in all, the claim decides across both
    for (let i = 0; i < 2; i++) replicas.push(await startApp({ gateway, env: { DATABASE_URL: databaseUrl } }));
  });
  afterAll(async () => {
    for (const replica of replicas) await replica.close();
    await minimax?.close();
    await db?.end();
    await adminQuery(base, `DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`);
  });

  const submit = async (secret: string, text: string): Promise<string> => {
    const res = await replicas[0].http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({
        model: MODEL,
        text,
        voice_setting: { voice_id: VOICE },
        audio_setting: { format: 'wav', sample_rate: 16000, channel: 1 },
      });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };
  const rows = async (): Promise<Row[]> =>
    (
      await db.query<Row>(
        `SELECT id, key_id, status, created_at, started_at, completed_at FROM speech_tasks ORDER BY created_at`,
      )
    ).rows;

  it("runs key A's one small task while key B has 20 long tasks queued, within one task's time", async () => {
    minimax.setMode('slowFirstByte', { delayMs: CALL_MS });
    const a = await replicas[0].createKey('A: one small task', [{ provider: 'fair-minimax', model: MODEL }]);
    const b = await replicas[0].createKey('B: a long backlog', [{ provider: 'fair-minimax', model: MODEL }]);

    const backlog: string[] = [];
    for (let i = 0; i < B_TASKS; i++) backlog.push(await submit(b.secret, longText(`B${i}`, 6000)));
    // every worker busy with B's tasks before A's task arrives
    await eventually(
      rows,
      (all) => all.filter((r) => r.status === 'processing').length === 4,
      10000,
      "4 of B's tasks running",
    );
    const small = await submit(a.secret, 'A small task, at last.');
    expect('A small task, at last.'.length).toBe(22);

    const done = await eventually(
      async () =>
        (await replicas[1].http.get(`/v1/audio/speech/async/${small}`).set('Authorization', `Bearer ${a.secret}`))
          .body as { status: string },
      (task) => task.status === 'completed' || task.status === 'failed',
      60000,
      "A's task done",
    );
    expect(done.status).toBe('completed');

    const all = await rows();
    const mine = all.find((r) => r.id === small);
    const theirs = all.filter((r) => backlog.includes(r.id));
    if (!mine?.started_at || !mine.completed_at) throw new Error("A's task has no start or end");
    // B still had most of its backlog waiting when A's task was done
    expect(
      theirs.filter((r) => !r.started_at || r.started_at > (mine.completed_at as Date)).length,
    ).toBeGreaterThanOrEqual(B_TASKS - 8);

    // A waited only for the first worker to finish the task it was on, not for B's queue ahead of it
    const finishedAfterSubmit = theirs
      .map((r) => r.completed_at)
      .filter((t): t is Date => t !== null && t >= mine.created_at);
    expect(finishedAfterSubmit.length).toBeGreaterThan(0);
    const firstFreeWorker = Math.min(...finishedAfterSubmit.map((t) => t.getTime()));
    expect(mine.started_at.getTime() - firstFreeWorker).toBeLessThanOrEqual(POLL_SLACK_MS);

    // within one task's time: the longest B task plus A's own run (and a poll)
    const longestB = Math.max(
      ...theirs
        .filter((r) => r.started_at && r.completed_at)
        .map((r) => (r.completed_at as Date).getTime() - (r.started_at as Date).getTime()),
    );
    const ownRun = mine.completed_at.getTime() - mine.started_at.getTime();
    const waited = mine.completed_at.getTime() - mine.created_at.getTime();
    process.stdout.write(
      `fair scheduling: A's task done ${waited} ms after submission (own run ${ownRun} ms, longest B task ${longestB} ms)\n`,
    );
    expect(waited).toBeLessThanOrEqual(longestB + ownRun + POLL_SLACK_MS);
  });
});
