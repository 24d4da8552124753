import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { ADMIN_TOKEN } from './support/app';
import { adminQuery, withDatabase } from './support/database';
import { expectCleanExit, spawnService, ServiceProcess } from './support/process';

// runs the BUILT service (dist/src/main.js): `npm test` builds first; run `npx nest build` after a change
jest.setTimeout(240000);

const MODEL = 'speech-02-hd';
const SENTENCES = [
  'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more.',
  'Rain drummed on the tin roof while the children counted the seconds between thunder and lightning!',
  'Nobody expected the old ferry to cross the bay in under twenty minutes, yet it did.',
  'Why would a careful engineer leave the bridge drawings on the kitchen table?',
  'Markets opened slowly; traders watched the screens, sipped coffee and waited for news.',
];

function longText(chars: number): string {
  let text = '';
  for (let i = 0; text.length < chars; i++) text += `${SENTENCES[i % SENTENCES.length]} Part ${i + 1} is done. `;
  return `${text.slice(0, chars - 1)}.`;
}

interface TaskRecord {
  id: string;
  status: string;
  characters: number;
  characters_done: number;
  completed_at: number | null;
  audio: { format: string; sample_rate: number; channel: number; bytes: number; duration_ms: number } | null;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('async speech tasks across a crash of the service', () => {
  const running: ServiceProcess[] = [];
  let dir: string;
  let db: Client;
  // a database of its own: the apps of other test files (same run database, same job queue) must not pick up these tasks
  const base = process.env.SVC_TEST_BASE_DATABASE_URL ?? process.env.DATABASE_URL ?? '';
  const databaseName = `svc_test_restart_${Date.now()}_${process.pid}`;
  const databaseUrl = withDatabase(base, databaseName);

  /** The built service on this file's database, with only the offline engine. */
  async function boot(): Promise<{ service: ServiceProcess; url: string }> {
    const service = spawnService({
      DATABASE_URL: databaseUrl,
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_SYNC_INTERVAL_MS: '200',
    });
    running.push(service);
    const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    return { service, url };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-task-restart-'));
    writeFileSync(join(dir, 'gateway.yaml'), 'providers:\n  - name: espeak\n    kind: espeak\n');
    await adminQuery(base, `CREATE DATABASE "${databaseName}"`);
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    for (const service of running) service.child.kill('SIGKILL');
    await db.end();
    await Promise.all(running.map((service) => service.exited));
    await adminQuery(base, `DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes a task killed mid-way within 60 s of the restart, never re-synthesising a stored chunk, and completes it once', async () => {
    const first = await boot();
    const key = await request(first.url)
      .post('/v1/admin/keys')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name: 'restart', chain: [{ provider: 'espeak', model: MODEL }] });
    expect(key.status).toBe(201);
    const secret = key.body.secret as string;
    // 15 chunks: the kill comes after 4 are stored, far from the end
    const text = longText(15000);
    const created = await request(first.url)
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({
        model: MODEL,
        text,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'pcm', sample_rate: 16000 },
      });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    const record = async (url: string): Promise<TaskRecord> =>
      (await request(url).get(`/v1/audio/speech/async/${id}`).set('Authorization', `Bearer ${secret}`))
        .body as TaskRecord;

    // some chunks stored, the task far from done: kill without any chance to clean up
    for (let task = await record(first.url); (await chunkCount()) < 4; task = await record(first.url)) {
      expect(task.status).toMatch(/queued|processing/);
      await sleep(100);
    }
    first.service.child.kill('SIGKILL');
    await first.service.exited;
    const [{ killed_at: killedAt }] = (await db.query<{ killed_at: Date }>(`SELECT now() AS killed_at`)).rows;
    const beforeKill = (
      await db.query<{ idx: number; pcm: Buffer }>(
        `SELECT idx, pcm FROM speech_task_chunks WHERE task_id = $1 ORDER BY idx`,
        [id],
      )
    ).rows;
    const storedBefore = new Set(beforeKill.map((c) => c.idx));
    const [{ chunks_total: total, status: statusAtKill }] = (
      await db.query<{ chunks_total: number; status: string }>(
        `SELECT chunks_total, status FROM speech_tasks WHERE id = $1`,
        [id],
      )
    ).rows;
    expect(statusAtKill).toBe('processing');
    expect(storedBefore.size).toBeGreaterThanOrEqual(4);
    expect(storedBefore.size).toBeLessThan(total);

    const second = await boot();
    const restartedAt = Date.now();
    // resumed: a chunk that was not stored before the kill gets stored
    while ((await chunkCount()) <= storedBefore.size && (await record(second.url)).status !== 'completed') {
      expect(Date.now() - restartedAt).toBeLessThan(60000);
      await sleep(250);
    }
    const resumedAfterMs = Date.now() - restartedAt;

    let task = await record(second.url);
    while (task.status !== 'completed') {
      expect(['queued', 'processing']).toContain(task.status);
      expect(Date.now() - restartedAt).toBeLessThan(180000);
      await sleep(500);
      task = await record(second.url);
    }
    expect(task.characters_done).toBe(text.length);

    // every chunk synthesised after the kill is one that was not stored before it, each exactly once (usage records cannot be hidden by ON CONFLICT)
    await sleep(1500); // the usage writer flushes every 100 ms: many flushes, retries included
    const prefix = `req_${id}_`;
    const afterKill = (
      await db.query<{ request_id: string; status: number }>(
        `SELECT request_id, status FROM usage_records WHERE request_id LIKE $1 AND created_at > $2`,
        [`${prefix}%`, killedAt],
      )
    ).rows;
    const redone = afterKill.map((r) => Number(r.request_id.slice(prefix.length)));
    expect(redone.filter((idx) => storedBefore.has(idx))).toEqual([]);
    expect(new Set(redone).size).toBe(redone.length);
    expect([...redone, ...storedBefore].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(afterKill.every((r) => r.status === 200)).toBe(true);

    // claimed once by each process, completed once: one contiguous set of parts, chunks gone
    const [row] = (
      await db.query<{ attempts: number; completed_at: Date }>(
        `SELECT attempts, completed_at FROM speech_tasks WHERE id = $1`,
        [id],
      )
    ).rows;
    expect(row.attempts).toBe(2);
    const parts = (
      await db.query<{ part: number; size: number }>(
        `SELECT part, octet_length(data) AS size FROM speech_task_results WHERE task_id = $1 ORDER BY part`,
        [id],
      )
    ).rows;
    expect(parts.map((p) => p.part)).toEqual(parts.map((_, i) => i));
    expect(parts.reduce((sum, p) => sum + Number(p.size), 0)).toBe(task.audio?.bytes);
    expect(await chunkCount()).toBe(0);

    // the file is the chunks in order: its start is exactly the PCM stored by the killed process
    const file = await request(second.url)
      .get(`/v1/audio/speech/async/${id}/download`)
      .set('Authorization', `Bearer ${secret}`)
      .buffer(true)
      .parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('audio/L16;rate=16000;channels=1');
    const bytes = file.body as Buffer;
    expect(bytes.length).toBe(task.audio?.bytes);
    expect(Math.abs((bytes.length / 2 / 16000) * 1000 - (task.audio?.duration_ms ?? 0))).toBeLessThanOrEqual(1);
    const prefixChunks: Buffer[] = [];
    for (let idx = 0; storedBefore.has(idx); idx++)
      prefixChunks.push(beforeKill.find((c) => c.idx === idx)?.pcm ?? Buffer.alloc(0));
    const head = Buffer.concat(prefixChunks);
    expect(head.length).toBeGreaterThan(0);
    expect(bytes.subarray(0, head.length).equals(head)).toBe(true);

    await sleep(3000);
    const [again] = (
      await db.query<{ completed_at: Date; status: string }>(
        `SELECT completed_at, status FROM speech_tasks WHERE id = $1`,
        [id],
      )
    ).rows;
    expect(again).toEqual({ completed_at: row.completed_at, status: 'completed' });
    process.stdout.write(
      `restart: ${storedBefore.size}/${total} chunks stored before the kill; resumed ${resumedAfterMs} ms after the restart\n`,
    );
    // the next test needs this database to itself
    second.service.child.kill('SIGTERM');
    await expectCleanExit(second.service);

    async function chunkCount(): Promise<number> {
      return Number(
        (await db.query<{ n: string }>(`SELECT count(*) AS n FROM speech_task_chunks WHERE task_id = $1`, [id])).rows[0]
          .n,
      );
    }
  });

  it('hands a running task back to the queue on SIGTERM, without spending an attempt, and the next start finishes it at once', async () => {
    const first = await boot();
    const key = await request(first.url)
      .post('/v1/admin/keys')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name: 'graceful', chain: [{ provider: 'espeak', model: MODEL }] });
    const secret = key.body.secret as string;
    const created = await request(first.url)
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({
        model: MODEL,
        text: longText(15000),
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'wav', sample_rate: 8000 },
      });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    const chunks = async (): Promise<number> =>
      Number(
        (await db.query<{ n: string }>(`SELECT count(*) AS n FROM speech_task_chunks WHERE task_id = $1`, [id])).rows[0]
          .n,
      );
    while ((await chunks()) < 2) await sleep(100);

    first.service.child.kill('SIGTERM');
    await expectCleanExit(first.service);
    const [held] = (
      await db.query<{ status: string; worker_id: string | null; attempts: number }>(
        `SELECT status, worker_id, attempts FROM speech_tasks WHERE id = $1`,
        [id],
      )
    ).rows;
    expect(held).toEqual({ status: 'queued', worker_id: null, attempts: 0 });
    const kept = await chunks();
    expect(kept).toBeGreaterThanOrEqual(2);

    const second = await boot();
    const restartedAt = Date.now();
    // the job was re-sent with the release: a worker claims it again with no 30 s staleness wait, only pg-boss's
    // retry delay at most (the claim, not the next chunk, is timed: synthesis speed depends on the machine's load)
    for (;;) {
      const [row] = (await db.query<{ status: string }>(`SELECT status FROM speech_tasks WHERE id = $1`, [id])).rows;
      if (row.status !== 'queued') break;
      expect(Date.now() - restartedAt).toBeLessThan(25000);
      await sleep(200);
    }
    let task: TaskRecord;
    do {
      await sleep(300);
      task = (await request(second.url).get(`/v1/audio/speech/async/${id}`).set('Authorization', `Bearer ${secret}`))
        .body as TaskRecord;
      expect(Date.now() - restartedAt).toBeLessThan(120000);
    } while (task.status !== 'completed');
    expect(task.audio).toMatchObject({ format: 'wav', sample_rate: 8000, channel: 1 });
    const [done] = (await db.query<{ attempts: number }>(`SELECT attempts FROM speech_tasks WHERE id = $1`, [id])).rows;
    expect(done.attempts).toBe(1);
    second.service.child.kill('SIGTERM');
    await expectCleanExit(second.service);
  });
});
