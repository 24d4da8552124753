import type { Response } from 'superagent';
import { DataSource } from 'typeorm';
import { parseFlacStreamInfo, parseWavHeader, pcmFrameCount, scanMp3Frames } from '../src/audio/parse';
import { SpeechTaskScheduler } from '../src/speech/tasks/speech-task.scheduler';
import { EnvironmentVariables } from '../src/config/env.schema';
import { ESPEAK_DEFAULT_VOICE } from '../src/audio/engines/espeak/espeak-voice';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';

// every test waits for real synthesis by the offline engine
jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const CHAIN = [{ provider: 'espeak', model: MODEL }];
const TERMINAL = ['completed', 'failed', 'expired'];

interface TaskRecord {
  id: string;
  object: string;
  status: string;
  model: string;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  expires_at: number | null;
  characters: number;
  characters_done: number;
  provider: string | null;
  fallback_level: number | null;
  audio: {
    format: string;
    sample_rate: number;
    channel: number;
    bytes: number;
    duration_ms: number;
    bitrate?: number;
  } | null;
  error: { code: string; message: string } | null;
}

const SENTENCES = [
  'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more.',
  'Rain drummed on the tin roof while the children counted the seconds between thunder and lightning!',
  'Nobody expected the old ferry to cross the bay in under twenty minutes, yet it did.',
  'Why would a careful engineer leave the bridge drawings on the kitchen table?',
  'Markets opened slowly; traders watched the screens, sipped coffee and waited for news.',
  'In the spring the orchard turned white, and the bees arrived from three valleys away.',
];

/** Readable English of exactly `chars` characters, varied so that chunks differ. */
function longText(chars: number): string {
  let text = '';
  for (let i = 0; text.length < chars; i++) text += `${SENTENCES[i % SENTENCES.length]} Part ${i + 1} is done. `;
  return `${text.slice(0, chars - 1)}.`;
}

/** Collects a binary body into a Buffer (supertest buffers only text by default). */
function binary(res: Response, done: (err: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

describe('async speech tasks', () => {
  let t: TestApp;
  let secret: string;
  let db: DataSource;

  const auth = (token = secret): [string, string] => ['Authorization', `Bearer ${token}`];
  const submit = (body: object, token = secret) =>
    t.http
      .post('/v1/audio/speech/async')
      .set(...auth(token))
      .send(body);
  const download = (id: string, token = secret) =>
    t.http
      .get(`/v1/audio/speech/async/${id}/download`)
      .set(...auth(token))
      .buffer(true)
      .parse(binary);

  /** Polls until `done` (default: a terminal status); every record seen is kept for progress checks. */
  async function poll(
    id: string,
    done = (task: TaskRecord) => TERMINAL.includes(task.status),
    timeoutMs = 60000,
  ): Promise<{ task: TaskRecord; seen: TaskRecord[] }> {
    const deadline = Date.now() + timeoutMs;
    const seen: TaskRecord[] = [];
    for (;;) {
      const res = await t.http.get(`/v1/audio/speech/async/${id}`).set(...auth());
      expect(res.status).toBe(200);
      const task = res.body as TaskRecord;
      seen.push(task);
      if (done(task)) return { task, seen };
      if (Date.now() > deadline)
        throw new Error(
          `task ${id} still ${task.status} after ${timeoutMs} ms (${task.characters_done}/${task.characters})`,
        );
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  beforeAll(async () => {
    t = await startApp({ env: { SVC_TASK_TTL: '1h' } });
    secret = (await t.createKey('tasks', CHAIN)).secret;
    db = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  it.each([
    ['wav', 16000, 1, 'audio/wav'],
    ['flac', 22050, 2, 'audio/flac'],
    ['mp3', 24000, 2, 'audio/mpeg'],
    ['pcm', 8000, 1, 'audio/L16;rate=8000;channels=1'],
  ])(
    'runs a %s task from 202 to a download at exactly the requested rate and channels',
    async (format, rate, channels, contentType) => {
      // two chunks: the file joins them into one stream
      const chars = 1800;
      const text = longText(chars);
      const created = await submit({
        model: MODEL,
        text,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format, sample_rate: rate, channel: channels },
      });
      expect(created.status).toBe(202);
      const record = created.body as TaskRecord;
      expect(record).toEqual({
        id: expect.stringMatching(/^task_[0-9A-Za-z]{24}$/),
        object: 'audio.speech.task',
        status: 'queued',
        model: MODEL,
        created_at: expect.any(Number),
        started_at: null,
        completed_at: null,
        expires_at: null,
        characters: chars,
        characters_done: 0,
        provider: null,
        fallback_level: null,
        audio: null,
        error: null,
        voice_switches: [],
      });
      expect(Math.abs(record.created_at - Date.now() / 1000)).toBeLessThan(5);
      expect(created.headers.location).toBe(`/v1/audio/speech/async/${record.id}`);

      const { task } = await poll(record.id);
      expect(task).toMatchObject({
        status: 'completed',
        characters_done: chars,
        provider: 'espeak',
        fallback_level: 0,
        error: null,
      });
      expect(task.audio).toMatchObject({ format, sample_rate: rate, channel: channels });
      expect(task.started_at).toBeGreaterThanOrEqual(task.created_at);
      expect(task.completed_at).toBeGreaterThanOrEqual(task.started_at ?? Infinity);
      expect(task.expires_at).toBe((task.completed_at ?? 0) + 3600);

      const res = await download(record.id);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(contentType);
      const bytes = res.body as Buffer;
      expect(Number(res.headers['content-length'])).toBe(bytes.length);
      expect(bytes.length).toBe(task.audio?.bytes);

      // English at espeak's default pace: about 14 characters a second
      let seconds: number;
      if (format === 'wav') {
        const wav = parseWavHeader(bytes);
        expect(wav).toMatchObject({ formatTag: 1, sampleRate: rate, channels, bitsPerSample: 16, dataOffset: 44 });
        expect(wav.dataOffset + wav.dataLength).toBe(bytes.length);
        seconds = pcmFrameCount(wav.dataLength, channels) / rate;
      } else if (format === 'flac') {
        const info = parseFlacStreamInfo(bytes);
        expect(info).toMatchObject({ sampleRate: rate, channels, bitsPerSample: 16 });
        seconds = info.totalSamples / rate;
      } else if (format === 'mp3') {
        const mp3 = scanMp3Frames(bytes);
        expect(mp3.first).toMatchObject({ sampleRate: rate, channels });
        expect(mp3.uniform).toBe(true);
        expect(mp3.trailingBytes).toBe(0);
        expect(mp3.first.bitrate).toBe(task.audio?.bitrate);
        seconds = mp3.durationSeconds;
      } else {
        seconds = pcmFrameCount(bytes.length, channels) / rate;
      }
      expect(Math.abs(seconds * 1000 - (task.audio?.duration_ms ?? 0))).toBeLessThan(200);
      expect(seconds).toBeGreaterThan(chars / 30);
      expect(seconds).toBeLessThan(chars / 8);
    },
  );

  it('speaks a 20,000-character text, reporting progress, and answers 409 task_not_completed until it is done', async () => {
    const started = Date.now();
    // flac: lamejs encodes 32 kHz mp3 at ~18x real time, so 20 minutes of mp3 alone would take over a minute here
    const created = await submit({
      model: MODEL,
      text: longText(20000),
      voice_setting: { voice_id: 'en-us' },
      audio_setting: { format: 'flac', sample_rate: 16000 },
    });
    expect(created.status).toBe(202);
    const id = (created.body as TaskRecord).id;

    const early = await t.http.get(`/v1/audio/speech/async/${id}/download`).set(...auth());
    expect(early.status).toBe(409);
    expect(early.body).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'task_not_completed',
        param: 'task_id',
        message: expect.stringMatching(/^The task is (queued|processing)/),
      },
    });

    const { seen } = await poll(id, (task) => task.status === 'processing' && task.characters_done > 0);
    const midway = await t.http.get(`/v1/audio/speech/async/${id}/download`).set(...auth());
    expect(midway.status).toBe(409);
    expect(midway.body.error.code).toBe('task_not_completed');

    const rest = await poll(id, undefined, 90000);
    const elapsed = Date.now() - started;
    const progress = [...seen, ...rest.seen].map((task) => task.characters_done);
    expect(rest.task.status).toBe('completed');
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.some((done) => done > 0 && done < 20000)).toBe(true);
    expect(rest.task.characters_done).toBe(20000);
    // 100 % only when the audio is ready: joining the chunks into the file counts too (issue 17.6)
    const unfinished = [...seen, ...rest.seen].filter((task) => task.status !== 'completed');
    expect(unfinished.length).toBeGreaterThan(0);
    expect(unfinished.every((task) => task.characters_done < 20000)).toBe(true);
    expect(rest.task.audio).toMatchObject({ format: 'flac', sample_rate: 16000, channel: 1 });

    const res = await download(id);
    expect(res.status).toBe(200);
    const flac = parseFlacStreamInfo(res.body as Buffer);
    expect(flac).toMatchObject({ sampleRate: 16000, channels: 1 });
    const seconds = flac.totalSamples / 16000;
    expect(seconds).toBeGreaterThan(20000 / 30);
    // the file was stored in parts of 1 MiB and the chunks are gone once it was assembled
    const parts = await db.query<Array<{ part: number; size: number }>>(
      `SELECT part, octet_length(data) AS size FROM speech_task_results WHERE task_id = $1 ORDER BY part`,
      [id],
    );
    expect(parts.map((p) => p.part)).toEqual(parts.map((_, i) => i));
    expect(parts.slice(0, -1).every((p) => p.size === 1024 * 1024)).toBe(true);
    expect(await db.query(`SELECT 1 FROM speech_task_chunks WHERE task_id = $1`, [id])).toEqual([]);
    process.stdout.write(`20,000-character task: ${elapsed} ms to completion, ${Math.round(seconds)} s of audio\n`);
  }, 120000);

  it('fails a task whose chunk the current chain cannot speak, and download says why with 409 task_failed', async () => {
    const key = await t.createKey('changing chain', CHAIN);
    const created = await submit(
      { model: MODEL, text: longText(6000), voice_setting: { voice_id: 'en-us' } },
      key.secret,
    );
    expect(created.status).toBe(202);
    // the chain is read per chunk: a voice_map to a voice espeak lacks makes the next chunk the client's error
    const patched = await t.http
      .patch(`/v1/admin/keys/${key.id}`)
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ chain: [{ provider: 'espeak', model: MODEL, voice_map: { '*': 'no-such-voice' } }] });
    expect(patched.status).toBe(200);
    const record = async (): Promise<TaskRecord> =>
      (await t.http.get(`/v1/audio/speech/async/${created.body.id}`).set(...auth(key.secret))).body as TaskRecord;
    const deadline = Date.now() + 60000;
    let task = await record();
    while (!TERMINAL.includes(task.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 150));
      task = await record();
    }
    expect(task.status).toBe('failed');
    expect(task.error).toEqual({ code: 'voice_not_found', message: expect.stringContaining("'en-us'") });
    expect(task.audio).toBeNull();
    const res = await download(task.id, key.secret);
    expect(res.status).toBe(409);
    expect(JSON.parse((res.body as Buffer).toString())).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'task_failed',
        param: 'task_id',
        message: `The task failed: ${task.error?.message}`,
      },
    });
    expect(await db.query(`SELECT 1 FROM speech_task_chunks WHERE task_id = $1`, [task.id])).toEqual([]);
    // nothing will read the text again: it is not kept
    expect(
      await db.query(
        `SELECT job->>'text' AS text, jsonb_array_length(plan) AS chunks FROM speech_tasks WHERE id = $1`,
        [task.id],
      ),
    ).toEqual([{ text: '', chunks: 0 }]);
  });

  it('expires a completed task after its retention: status expired, 410 task_expired, file deleted', async () => {
    const created = await submit({
      model: MODEL,
      text: 'A short text that will not be kept for long.',
      voice_setting: { voice_id: 'en-us' },
      audio_setting: { format: 'wav' },
    });
    const { task } = await poll(created.body.id);
    expect(task.status).toBe('completed');
    expect((await download(task.id)).status).toBe(200);

    await db.query(`UPDATE speech_tasks SET expires_at = now() - interval '1 second' WHERE id = $1`, [task.id]);
    // past expires_at the task is expired at once, before the retention job has run
    const gone = await download(task.id);
    expect(gone.status).toBe(410);
    expect(JSON.parse((gone.body as Buffer).toString()).error).toMatchObject({
      code: 'task_expired',
      param: 'task_id',
    });
    expect((await poll(task.id)).task.status).toBe('expired');

    expect(await t.app.get(SpeechTaskScheduler).applyRetention()).toBeGreaterThanOrEqual(1);
    expect(await db.query(`SELECT 1 FROM speech_task_results WHERE task_id = $1`, [task.id])).toEqual([]);
    const after = (await poll(task.id)).task;
    expect(after).toMatchObject({ status: 'expired', audio: { format: 'wav', sample_rate: 32000, channel: 1 } });
    expect((await download(task.id)).status).toBe(410);
  });

  it("answers 404 for another key's task exactly as for an id that never existed, status and download alike", async () => {
    const created = await submit({ model: MODEL, text: 'Mine alone.', voice_setting: { voice_id: 'en-us' } });
    const other = await t.createKey('other', CHAIN);
    const notFound = (id: string) => ({
      error: {
        type: 'not_found_error',
        code: 'resource_not_found',
        param: 'task_id',
        message: `No speech task found with id '${id}'.`,
      },
    });
    for (const id of [created.body.id as string, 'task_doesnotexist000000000000', 'nonsense']) {
      const token = id === created.body.id ? other.secret : secret;
      const status = await t.http.get(`/v1/audio/speech/async/${id}`).set(...auth(token));
      expect(status.status).toBe(404);
      expect(status.body).toEqual(notFound(id));
      const file = await download(id, token);
      expect(file.status).toBe(404);
      expect(JSON.parse((file.body as Buffer).toString())).toEqual(notFound(id));
    }
    expect((await t.http.get(`/v1/audio/speech/async/${created.body.id}`)).status).toBe(401);
  });

  it.each([
    ['no model', { text: 'Hi.', voice_setting: { voice_id: 'en-us' } }],
    ['no text', { model: MODEL, voice_setting: { voice_id: 'en-us' } }],
    ['an unknown field', { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'en-us' }, streaming: true }],
    [
      'a voice_modify out of range',
      { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'en-us' }, voice_modify: { pitch: 120 } },
    ],
    [
      'a sample rate MiniMax lacks',
      { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'en-us' }, audio_setting: { sample_rate: 48000 } },
    ],
    ['a speed out of range', { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'en-us', speed: 3 } }],
    ['a model no step serves', { model: 'speech-01', text: 'Hi.', voice_setting: { voice_id: 'en-us' } }],
    ['a voice the entry step lacks', { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'no-such-voice' } }],
  ])('refuses %s with the same 400 as synchronous speech, storing nothing', async (_, body) => {
    const before = await db.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM speech_tasks`);
    const res = await submit(body);
    const sync = await t.http
      .post('/v1/audio/speech')
      .set(...auth())
      .send(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(sync.body);
    expect(res.headers.location).toBeUndefined();
    expect(await db.query(`SELECT count(*) AS n FROM speech_tasks`)).toEqual(before);
  });

  it("speaks a request without voice_setting (only model and text are required) with the entry step's default voice", async () => {
    const created = await submit({ model: MODEL, text: 'No voice was asked for.' });
    expect(created.status).toBe(202);
    const id = (created.body as TaskRecord).id;
    const [{ voice }] = await db.query<Array<{ voice: string }>>(
      `SELECT job->>'voiceId' AS voice FROM speech_tasks WHERE id = $1`,
      [id],
    );
    expect(voice).toBe(ESPEAK_DEFAULT_VOICE);
    const { task } = await poll(id);
    expect(task).toMatchObject({ status: 'completed', provider: 'espeak', fallback_level: 0 });
    expect((await download(id)).status).toBe(200);
  });

  it("speaks without voice_setting with the chain step's voice_map default when it has one", async () => {
    const mapped = await t.createKey('tasks mapped voice', [
      { provider: 'espeak', model: MODEL, voice_map: { '*': 'en-gb' } },
    ]);
    const created = await submit({ model: MODEL, text: 'Hi.' }, mapped.secret);
    expect(created.status).toBe(202);
    const [{ voice }] = await db.query<Array<{ voice: string }>>(
      `SELECT job->>'voiceId' AS voice FROM speech_tasks WHERE id = $1`,
      [(created.body as TaskRecord).id],
    );
    expect(voice).toBe('en-gb');
  });

  it('still refuses a voice_setting without voice_id, naming the field', async () => {
    const res = await submit({ model: MODEL, text: 'Hi.', voice_setting: { speed: 1 } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'missing_field',
      param: 'voice_setting.voice_id',
    });
  });

  it('holds a key to SVC_TASKS_MAX_PENDING_PER_KEY tasks queued or processing, concurrent submits included: 429 too_many_tasks', async () => {
    const env = t.app.get(EnvironmentVariables);
    const before = env.SVC_TASKS_MAX_PENDING_PER_KEY;
    env.SVC_TASKS_MAX_PENDING_PER_KEY = 2;
    try {
      const key = await t.createKey('pending limit', CHAIN);
      const body = { model: MODEL, text: longText(1500) };
      const answers = await Promise.all([1, 2, 3, 4].map(() => submit(body, key.secret)));
      expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 429, 429]);
      const refused = answers.find((a) => a.status === 429);
      expect(refused?.body).toEqual({
        error: { message: expect.stringContaining('2'), type: 'rate_limit_error', param: null, code: 'too_many_tasks' },
      });
      const [{ n }] = await db.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM speech_tasks WHERE key_id = $1`,
        [key.id],
      );
      expect(n).toBe(2);
      // room again once they are done
      const pending = async (): Promise<number> =>
        (
          await db.query<Array<{ n: number }>>(
            `SELECT count(*)::int AS n FROM speech_tasks WHERE key_id = $1 AND status IN ('queued', 'processing')`,
            [key.id],
          )
        )[0].n;
      for (let waited = 0; (await pending()) > 0; waited += 150) {
        if (waited > 60000) throw new Error('the two tasks did not finish within 60 s');
        await new Promise((r) => setTimeout(r, 150));
      }
      expect((await submit(body, key.secret)).status).toBe(202);
    } finally {
      env.SVC_TASKS_MAX_PENDING_PER_KEY = before;
    }
  });

  it('takes up to 200,000 characters and refuses more with 413 text_too_long', async () => {
    const key = await t.createKey('big texts', CHAIN);
    const over = await submit(
      { model: MODEL, text: longText(200001), voice_setting: { voice_id: 'en-us' } },
      key.secret,
    );
    expect(over.status).toBe(413);
    expect(over.body.error).toMatchObject({ code: 'text_too_long', param: 'text', type: 'invalid_request_error' });
    const limit = await submit(
      { model: MODEL, text: longText(200000), voice_setting: { voice_id: 'en-us' } },
      key.secret,
    );
    expect(limit.status).toBe(202);
    expect(limit.body).toMatchObject({ status: 'queued', characters: 200000 });
    // deleting the key takes its tasks with it (the running worker finds its task gone and stops)
    expect((await t.http.delete(`/v1/admin/keys/${key.id}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`)).status).toBe(
      200,
    );
    expect(await db.query(`SELECT 1 FROM speech_tasks WHERE id = $1`, [limit.body.id])).toEqual([]);
  });
});
