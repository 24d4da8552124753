import type { Response } from 'superagent';
import { parseWavHeader } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { eventually } from './support/failover';
import { Replica, ReplicaSet, startReplicas } from './support/replicas';

// runs the BUILT service (dist/src/main.js) twice: `npm test` builds first; run `npx nest build` after a change
jest.setTimeout(180000);

const MODEL = 'speech-02-hd';
const T2A = '/v1/t2a_v2';
const SENTENCES = [
  'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more.',
  'Rain drummed on the tin roof while the children counted the seconds between thunder and lightning!',
  'Nobody expected the old ferry to cross the bay in under twenty minutes, yet it did.',
  'Markets opened slowly; traders watched the screens, sipped coffee and waited for news.',
];

/** About `chars` characters of sentences, different for every `label`. */
const textOf = (label: string, chars: number): string => {
  let text = `Task ${label} begins here.`;
  for (let i = 0; text.length < chars; i++) text += ` ${SENTENCES[i % SENTENCES.length]} Part ${i + 1} of ${label}.`;
  return text;
};

const binary = (res: Response, done: (err: Error | null, body: Buffer) => void): void => {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
};

interface TaskRecord {
  id: string;
  status: string;
  characters: number;
  characters_done: number;
  provider: string | null;
  audio: { format: string; sample_rate: number; channel: number; bytes: number } | null;
}

/** Async speech on two processes of the built service sharing one database and one job queue (decisions §7). */
describe('async speech tasks on two replicas', () => {
  let set: ReplicaSet;
  let a: Replica;
  let b: Replica;
  let minimax: FakeMiniMax;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'so-minimax' });
    set = await startReplicas('scale_out_tasks', [{ name: minimax.name, kind: 'minimax', url: minimax.url }]);
    [a, b] = set.replicas;
  });
  afterAll(async () => {
    await set?.close();
    await minimax?.close();
  });

  it('runs tasks submitted on A once each, and B polls and downloads them', async () => {
    const { secret } = await set.createKey(a, 'tasks', [{ provider: minimax.name, model: MODEL }]);
    const texts = ['one', 'two', 'three', 'four'].map((label) => textOf(label, 2400));
    const ids: string[] = [];
    for (const text of texts) {
      const created = await a.http
        .post('/v1/audio/speech/async')
        .set('Authorization', `Bearer ${secret}`)
        .send({
          model: MODEL,
          text,
          voice_setting: { voice_id: 'English_Graceful_Lady' },
          audio_setting: { format: 'wav', sample_rate: 16000, channel: 1 },
        });
      expect(created.status).toBe(202);
      ids.push(created.body.id as string);
    }

    for (const [i, id] of ids.entries()) {
      const task = await eventually(
        async () =>
          (await b.http.get(`/v1/audio/speech/async/${id}`).set('Authorization', `Bearer ${secret}`))
            .body as TaskRecord,
        (t) => t.status === 'completed' || t.status === 'failed',
        90000,
        `task ${id} done, polled on B`,
      );
      expect(task).toMatchObject({
        status: 'completed',
        characters: texts[i].length,
        characters_done: texts[i].length,
        provider: minimax.name,
      });
      const file = await b.http
        .get(`/v1/audio/speech/async/${id}/download`)
        .set('Authorization', `Bearer ${secret}`)
        .buffer(true)
        .parse(binary);
      expect(file.status).toBe(200);
      expect(file.headers['content-type']).toBe('audio/wav');
      const bytes = file.body as Buffer;
      expect(bytes.length).toBe(task.audio?.bytes);
      expect(parseWavHeader(bytes)).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: 16 });
    }

    // synthesised once: one upstream call per planned chunk, no chunk text twice, one claim per task
    const rows = (
      await set.db.query<{ id: string; chunks_total: number; attempts: number; worker_id: string }>(
        `SELECT id, chunks_total, attempts, worker_id FROM speech_tasks WHERE id = ANY($1)`,
        [ids],
      )
    ).rows;
    const chunks = rows.reduce((sum, r) => sum + r.chunks_total, 0);
    expect(chunks).toBeGreaterThanOrEqual(2 * ids.length);
    const sent = minimax.requests.filter((r) => r.path === T2A).map((r) => (r.body as { text: string }).text);
    expect(sent).toHaveLength(chunks);
    expect(new Set(sent).size).toBe(sent.length);
    expect(rows.map((r) => r.attempts)).toEqual(ids.map(() => 1));
    const usage = await eventually(
      async () =>
        (
          await set.db.query<{ request_id: string }>(
            `SELECT request_id FROM usage_records WHERE request_id LIKE ANY($1)`,
            [ids.map((id) => `req_${id}_%`)],
          )
        ).rows,
      (found) => found.length >= chunks,
      5000,
      'one usage record per chunk',
    );
    expect(usage).toHaveLength(chunks);
    process.stdout.write(
      `scale-out tasks: ${ids.length} tasks, ${chunks} chunks, run by ${new Set(rows.map((r) => r.worker_id)).size} worker(s)\n`,
    );
  });
});
