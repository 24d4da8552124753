import { DataSource } from 'typeorm';
import { SpeechTaskScheduler } from '../src/speech/tasks/speech-task.scheduler';
import { tinyWav } from './support/audio';
import { startApp, TestApp } from './support/app';
import { isolatedDatabase } from './support/receiver';

// one task is synthesised by the offline engine
jest.setTimeout(120000);

const TEXT = 'A private sentence that must not outlive its retention.';

describe('privacy: what is deleted, and when', () => {
  let t: TestApp;
  let db: DataSource;
  let auth: string;
  let database: { url: string; drop(): Promise<void> };

  const count = async (sql: string, params: unknown[]): Promise<number> =>
    Number((await db.query<Array<{ n: string }>>(sql, params))[0].n);

  beforeAll(async () => {
    // a one-second retention: the test drives expiry by the setting, not by waiting a day. A database of its own:
    // on the shared one, a worker of another file's app (with the default day) could take the task and set its expiry
    database = await isolatedDatabase('privacy');
    t = await startApp({ env: { SVC_TASK_TTL: '1', DATABASE_URL: database.url } });
    db = t.app.get(DataSource);
    const key = await t.createKey('privacy', [{ provider: 'espeak', model: 'speech-02-hd' }]);
    auth = `Bearer ${key.secret}`;
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('deletes the recording bytes with the consent', async () => {
    const recording = tinyWav();
    const created = await t.http
      .post('/v1/audio/voice_consents')
      .set('Authorization', auth)
      .field('language', 'en')
      .field('name', 'to be deleted')
      .attach('recording', recording, 'c.wav');
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(
      await count('SELECT count(*) AS n FROM consent_recordings WHERE consent_id = $1 AND octet_length(data) = $2', [
        id,
        recording.length,
      ]),
    ).toBe(1);

    expect((await t.http.delete(`/v1/audio/voice_consents/${id}`).set('Authorization', auth)).status).toBe(200);
    expect(await count('SELECT count(*) AS n FROM consent_recordings WHERE consent_id = $1', [id])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM voice_consents WHERE id = $1', [id])).toBe(0);
    expect((await t.http.get(`/v1/audio/voice_consents/${id}/content`).set('Authorization', auth)).status).toBe(404);
  });

  it('removes the audio and the text of an async task once its retention is over', async () => {
    const submitted = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', auth)
      .send({
        model: 'speech-02-hd',
        text: TEXT,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'wav' },
      });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    let status = 'queued';
    for (let i = 0; i < 600 && status !== 'completed' && status !== 'expired' && status !== 'failed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await t.http.get(`/v1/audio/speech/async/${id}`).set('Authorization', auth)).body.status as string;
    }
    expect(['completed', 'expired']).toContain(status);
    // completed with a one-second retention: past it within a second and a half
    const [{ expires_at: expiresAt }] = await db.query<Array<{ expires_at: Date }>>(
      'SELECT expires_at FROM speech_tasks WHERE id = $1',
      [id],
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt.getTime() - Date.now()) + 200));

    // the retention job (every minute), run now
    await t.app.get(SpeechTaskScheduler).applyRetention();
    expect(await count('SELECT count(*) AS n FROM speech_task_results WHERE task_id = $1', [id])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM speech_task_chunks WHERE task_id = $1', [id])).toBe(0);
    const [row] = await db.query<Array<{ status: string; job: { text: string }; plan: unknown[] }>>(
      'SELECT status, job, plan FROM speech_tasks WHERE id = $1',
      [id],
    );
    expect(row.status).toBe('expired');
    expect(row.job.text).toBe('');
    expect(row.plan).toEqual([]);
    expect(JSON.stringify(row)).not.toContain('private sentence');
    const download = await t.http.get(`/v1/audio/speech/async/${id}/download`).set('Authorization', auth);
    expect(download.status).toBe(410);
  });
});
