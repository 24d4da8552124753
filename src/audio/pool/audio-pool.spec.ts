import { setTimeout as sleep } from 'node:timers/promises';
import { scanMp3Frames } from '../parse';
import { AudioJobError, AudioPool } from './audio-pool';
import { generate, openEncoder, RemoteCodec, runJob } from './pool-jobs';
import type { SpeechJobSpec, WorkerStats } from './protocol';
import { SLICE_BYTES } from './protocol';

// real synthesis and encoding in real worker processes (run from the TypeScript sources: see worker-script.ts)
jest.setTimeout(120000);

const SENTENCE = 'The quick brown fox jumps over the lazy dog, and then it runs far away. ';
const LONG_TEXT = SENTENCE.repeat(40);
/** Long enough to take many slices (about 45 s of audio), short enough for the fast test tier. */
const SLICED_TEXT = SENTENCE.repeat(12);
/** Output whose one sentence group takes seconds to encode as mp3 and is many slices as pcm. */
const HIFI = { sampleRate: 44100, channels: 2, bitrate: 128000 };
/** Output a tenth as costly to encode, for the cases that only need real jobs to run. */
const LOFI = { sampleRate: 22050, channels: 1, bitrate: 64000 };

function speech(
  text: string,
  format: SpeechJobSpec['output']['format'] = 'pcm',
  extra: Partial<SpeechJobSpec> = {},
  output: Omit<SpeechJobSpec['output'], 'format'> = LOFI,
): SpeechJobSpec {
  return { kind: 'speech', text, voice: 'en-us', speed: 1, vol: 1, pitch: 0, output: { format, ...output }, ...extra };
}

async function until(check: () => boolean, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}

describe('AudioPool: synthesis and encoding in worker processes', () => {
  let pool: AudioPool;
  beforeAll(() => (pool = new AudioPool({ size: 1, credit: 2 })));
  afterAll(() => pool.close());

  const stats = (): Promise<WorkerStats> => runJob<WorkerStats>({ kind: 'stats' }, pool);

  it('back-pressure: a consumer that does not pull holds the worker at its credit, then gets the rest in order', async () => {
    const received: Buffer[] = [];
    let done = false;
    const id = pool.start(speech(SLICED_TEXT, 'pcm', {}, HIFI), {
      slice: (b) => received.push(b),
      output: () => undefined,
      done: () => (done = true),
      failed: (e) => received.push(Buffer.from(`failed: ${e.message}`)),
    });
    await until(() => received.length >= 2);
    // pcm at 44.1 kHz stereo: one sentence group alone is many slices, yet no more than the credit came
    await sleep(500);
    expect(received.length).toBe(2);
    expect(received.every((b) => b.length <= SLICE_BYTES)).toBe(true);
    expect(done).toBe(false);
    pool.send(id, { t: 'credit', id, n: 1000000 });
    await until(() => done);
    expect(received.length).toBeGreaterThan(10);
  });

  it('cancel: a consumer that leaves stops the job and the worker releases its FLAC encoder', async () => {
    const chunks = generate(speech(LONG_TEXT, 'flac'), undefined, pool);
    const first = await chunks.next();
    expect(first.done).toBe(false);
    expect((first.value as Buffer).toString('latin1', 0, 4)).toBe('fLaC');
    expect(await stats()).toEqual({ jobs: 1, flacEncoders: 1 });
    await chunks.return(undefined);
    expect(await stats()).toEqual({ jobs: 0, flacEncoders: 0 });
    expect(pool.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  it('cancel by abort signal ends the stream without an error and frees the job', async () => {
    const client = new AbortController();
    const chunks = generate(speech(LONG_TEXT, 'flac'), client.signal, pool);
    expect((await chunks.next()).done).toBe(false);
    client.abort();
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      // slices already received may still come out
    }
    expect(await stats()).toEqual({ jobs: 0, flacEncoders: 0 });
  });

  it('jobs on one worker take turns between slices instead of waiting for each other', async () => {
    const order: string[] = [];
    const read = async (name: string, text: string): Promise<void> => {
      for await (const slice of generate(speech(text, 'mp3'), undefined, pool)) if (slice.length > 0) order.push(name);
      order.push(`${name}:end`);
    };
    // three sentence groups: a job that waited for the whole of the long one would end after its last slice
    await Promise.all([read('long', SENTENCE.repeat(20)), read('short', 'Hello there. This is short.')]);
    // the short job finished while the long one was still producing
    expect(order.indexOf('short:end')).toBeLessThan(order.indexOf('long:end'));
    expect(order.indexOf('short:end')).toBeLessThan(order.lastIndexOf('long'));
  });

  it('encodes fed samples: each push is answered, the tail ends a valid mp3', async () => {
    const encoder = openEncoder({ format: 'mp3', sampleRate: 16000, channels: 1, bitrate: 64000 }, pool);
    const tone = Int16Array.from({ length: 16000 }, (_, i) => Math.round(8000 * Math.sin(i / 10)));
    const parts = [await encoder.push(tone), await encoder.push(tone), await encoder.end()];
    const info = scanMp3Frames(Buffer.concat(parts));
    expect(info.first.sampleRate).toBe(16000);
    expect(info.trailingBytes).toBe(0);
    expect(info.durationSeconds).toBeGreaterThanOrEqual(2);
  });

  it('audio cap: a job over its seconds fails with audio_too_long, in the worker, as it counts', async () => {
    const codec = new RemoteCodec(
      {
        kind: 'transcode',
        from: { sampleRate: 8000, channels: 1 },
        output: { format: 'pcm', sampleRate: 8000, channels: 1, bitrate: 0 },
        maxSeconds: 1,
      },
      pool,
    );
    const second = new Uint8Array(16000);
    await expect(codec.push(second)).resolves.toHaveLength(16000);
    await expect(codec.push(second.subarray(0, 2))).rejects.toMatchObject({ code: 'audio_too_long', status: 413 });
    const chunks = generate(speech(LONG_TEXT, 'pcm', { maxSeconds: 3 }), undefined, pool);
    await expect(
      (async () => {
        for await (const slice of chunks) void slice;
      })(),
    ).rejects.toMatchObject({ code: 'audio_too_long' });
    expect(await stats()).toEqual({ jobs: 0, flacEncoders: 0 });
  });
});

describe('AudioPool: the queue', () => {
  it('a job over the per-worker cap waits in the queue (counted as queued) and runs when a slot frees', async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 1 });
    try {
      const first = generate(speech(LONG_TEXT, 'pcm'), undefined, pool);
      expect((await first.next()).done).toBe(false);
      const second = runJob<{ id: string }[]>({ kind: 'voices' }, pool);
      expect(pool.stats()).toEqual({ workers: 1, running: 1, queued: 1 });
      await first.return(undefined);
      expect((await second).some((voice) => voice.id === 'en-us')).toBe(true);
      expect(pool.stats()).toEqual({ workers: 1, running: 0, queued: 0 });
    } finally {
      await pool.close();
    }
  });
});

describe('AudioPool: fair shares across keys (decisions §11)', () => {
  /** A job of `key` that records when it waits, is taken and ends (a stats job ends as soon as it runs). */
  const tracked = (pool: AudioPool, key: string, name: string, events: string[]): number =>
    pool.start(
      { kind: 'stats' },
      {
        slice: () => undefined,
        output: () => undefined,
        done: () => events.push(`${name}:done`),
        failed: (err) => events.push(`${name}:${err.code}`),
        queued: () => events.push(`${name}:queued`),
        taken: () => events.push(`${name}:taken`),
      },
      key,
    );
  /** A job of `key` holding a slot until returned: an mp3 encoder that has answered once, so it is running. */
  const hold = async (pool: AudioPool, key: string): Promise<{ return(value: undefined): Promise<void> }> => {
    const encoder = openEncoder({ format: 'mp3', ...LOFI }, pool, { key });
    expect((await encoder.push(new Int16Array(2205))).length).toBeGreaterThanOrEqual(0);
    expect(pool.stats().running).toBeGreaterThanOrEqual(1);
    return { return: () => Promise.resolve(encoder.release()) };
  };

  it('admits waiting jobs round-robin across keys, the key served longest ago first', async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 1 });
    try {
      const events: string[] = [];
      const a1 = await hold(pool, 'key-a');
      tracked(pool, 'key-a', 'a2', events);
      tracked(pool, 'key-a', 'a3', events);
      tracked(pool, 'key-b', 'b1', events);
      await a1.return(undefined);
      await until(() => events.filter((e) => e.endsWith(':done')).length === 3);
      // first come, first served would be a2, a3, b1: key A had the slot, so key B's job goes next
      expect(events.filter((e) => e.endsWith(':done'))).toEqual(['b1:done', 'a2:done', 'a3:done']);
    } finally {
      await pool.close();
    }
  });

  it("holds a key to its share of the slots: another key's job runs at once, the key's own next job waits", async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 2, jobsPerKey: 1 });
    try {
      const events: string[] = [];
      const a1 = await hold(pool, 'key-a');
      tracked(pool, 'key-a', 'a2', events);
      tracked(pool, 'key-b', 'b1', events);
      await until(() => events.includes('b1:done'));
      expect(events).toEqual(['a2:queued', 'b1:done']);
      await a1.return(undefined);
      await until(() => events.includes('a2:done'));
    } finally {
      await pool.close();
    }
  });

  it('starts a waiting job’s deadline when a worker takes it: queued at start, taken only once a slot frees', async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 1 });
    try {
      const events: string[] = [];
      tracked(pool, 'key-a', 'first', events);
      await until(() => events.includes('first:done'));
      // a job that got a worker at once never waited: its deadline was never held
      expect(events).toEqual(['first:done']);
      const a1 = await hold(pool, 'key-a');
      tracked(pool, 'key-b', 'b1', events);
      await sleep(300);
      expect(events).toEqual(['first:done', 'b1:queued']);
      events.push('slot freed');
      await a1.return(undefined);
      await until(() => events.includes('b1:done'));
      expect(events).toEqual(['first:done', 'b1:queued', 'slot freed', 'b1:taken', 'b1:done']);
    } finally {
      await pool.close();
    }
  });

  it("answers busy when a key's queue is full or a job waited past the bound; other keys still queue", async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 1, queuePerKey: 1, maxWaitMs: 400 });
    try {
      const events: string[] = [];
      const a1 = await hold(pool, 'key-a');
      tracked(pool, 'key-a', 'a2', events);
      expect(() => tracked(pool, 'key-a', 'a3', events)).toThrow(expect.objectContaining({ code: 'busy' }));
      tracked(pool, 'key-b', 'b1', events);
      await until(() => events.includes('a2:busy') && events.includes('b1:busy'));
      expect(pool.stats()).toMatchObject({ running: 1, queued: 0 });
      await a1.return(undefined);
      // the slot freed: the pool serves again
      await expect(runJob({ kind: 'voices' }, pool)).resolves.toBeDefined();
    } finally {
      await pool.close();
    }
  });

  it('a full queue reaches the caller as 503 busy with Retry-After', async () => {
    const pool = new AudioPool({ size: 1, jobsPerWorker: 1, queuePerKey: 0 });
    try {
      const a1 = await hold(pool, 'key-a');
      const refused = generate(speech('Hello.', 'mp3'), undefined, pool, { key: 'key-a' });
      await expect(refused.next()).rejects.toMatchObject({
        code: 'busy',
        status: 503,
        headers: { 'Retry-After': '1' },
      });
      await a1.return(undefined);
    } finally {
      await pool.close();
    }
  });
});

describe('AudioPool: a worker that dies fails only its own jobs and is replaced', () => {
  it("a killed worker: its job fails with a clean error, the other worker's job completes, the next job succeeds", async () => {
    const pool = new AudioPool({ size: 2 });
    try {
      const doomed = generate(speech(LONG_TEXT, 'mp3'), undefined, pool);
      const first = doomed.next();
      await until(() => pool.stats().running === 1);
      const victim = pool.busyPids()[0];
      const other = (async () => {
        let bytes = 0;
        for await (const slice of generate(speech('One sentence on the other worker.', 'mp3'), undefined, pool))
          bytes += slice.length;
        return bytes;
      })();
      await until(() => pool.stats().running === 2);
      process.kill(victim, 'SIGKILL');
      await expect(
        (async () => {
          await first;
          for (let next = await doomed.next(); !next.done; next = await doomed.next());
        })(),
      ).rejects.toBeInstanceOf(AudioJobError);
      expect(await other).toBeGreaterThan(1000);
      await until(() => pool.stats().workers === 2);
      expect(pool.pids()).not.toContain(victim);
      const voices = await runJob<{ id: string }[]>({ kind: 'voices' }, pool);
      expect(voices.some((v) => v.id === 'en-us')).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('a runaway slice (no answer within the bound) gets its worker killed and replaced', async () => {
    // 300 ms is far less than one sentence group of 44.1 kHz stereo mp3 takes: every such slice counts as runaway here
    const pool = new AudioPool({ size: 1, sliceTimeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await (async () => {
        for await (const slice of generate(speech(LONG_TEXT, 'mp3', {}, HIFI), undefined, pool)) void slice;
      })().catch((err: unknown) => err);
      expect(error).toBeInstanceOf(AudioJobError);
      expect((error as AudioJobError).code).toBe('crashed');
      expect((error as AudioJobError).message).toMatch(/no progress for 300 ms/);
      expect(Date.now() - started).toBeLessThan(20000);
      // short work within the bound still runs on the replacement (pcm in and out: no codec to load, so a busy machine
      // does not make it a runaway too)
      const codec = new RemoteCodec(
        {
          kind: 'transcode',
          from: { sampleRate: 8000, channels: 1 },
          output: { format: 'pcm', sampleRate: 8000, channels: 1, bitrate: 0 },
        },
        pool,
      );
      await expect(codec.push(new Uint8Array(1600))).resolves.toHaveLength(1600);
      await codec.end();
      expect(pool.stats().workers).toBe(1);
    } finally {
      await pool.close();
    }
  });
});
