import type { EnvironmentVariables } from '../../config/env.schema';
import { acquireAudioPool, releaseAudioPool, runJob } from '../../audio/pool/pool-jobs';
import type { WorkerStats } from '../../audio/pool/protocol';
import { TaskAssembler } from './task-assembler';
import type { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';

const CHUNKS = 3;
/** Half a second of 16 kHz mono per chunk. */
const pcm = Buffer.from(Int16Array.from({ length: 8000 }, (_, i) => Math.round(8000 * Math.sin(i / 10))).buffer);

const task: ClaimedTask = {
  id: 'task_1',
  keyId: 'pk_1',
  attempts: 1,
  job: {
    model: 'speech-02-hd',
    text: 'A. B. C.',
    voiceId: 'en-us',
    speed: 1,
    vol: 1,
    pitch: 0,
    output: { format: 'flac', sampleRate: 16000, bitrate: 128000, channels: 1 },
  },
  plan: Array.from({ length: CHUNKS }, () => ({ text: 'A.', chars: 2 })),
  error: null,
  voicePin: null,
  voiceSwitch: 'allowed',
};

/** Stored chunks as the repository gives them; `chunkPcm` is what a test makes fail; `progress` records what assembly reports. */
function assembler(
  chunkPcm: (idx: number) => Promise<Buffer | null>,
  progress: number[] = [],
  completed: string[] = [],
): TaskAssembler {
  const repository = {
    chunkSummary: () =>
      Promise.resolve({ count: CHUNKS, bytes: CHUNKS * pcm.length, providers: [{ provider: 'espeak', level: 0 }] }),
    clearResult: () => Promise.resolve(true),
    insertPart: () => Promise.resolve(true),
    chunkPcm: (_task: string, idx: number) => chunkPcm(idx),
    assemblyProgress: (_task: string, _worker: string, done: number) => {
      progress.push(done);
      return Promise.resolve(true);
    },
    complete: (id: string) => {
      completed.push(id);
      return Promise.resolve(true);
    },
  };
  return new TaskAssembler(
    repository as unknown as SpeechTasksRepository,
    { SVC_TASK_TTL: 3600, SVC_MAX_TASK_AUDIO_SECONDS: 3600 } as EnvironmentVariables,
  );
}

/** FLAC encoders alive in the (one) audio worker, where the assembler's encoding runs. */
const liveFlacEncoders = async (): Promise<number> => (await runJob<WorkerStats>({ kind: 'stats' })).flacEncoders;

beforeAll(() => acquireAudioPool({ size: 1 }));
afterAll(() => releaseAudioPool());

describe('TaskAssembler: an assembly cut short still ends its FLAC encoder (libflac memory is never given back otherwise)', () => {
  it('when the task is aborted between chunks', async () => {
    const before = await liveFlacEncoders();
    const abort = new AbortController();
    const assembly = assembler((idx) => {
      if (idx === 1) abort.abort(new Error('shutting down'));
      return Promise.resolve(pcm);
    }).assemble(task, 'worker_1', abort.signal);
    await expect(assembly).rejects.toThrow('shutting down');
    expect(await liveFlacEncoders()).toBe(before);
  });

  it('when the database fails mid-assembly', async () => {
    const before = await liveFlacEncoders();
    const assembly = assembler((idx) =>
      idx === 1 ? Promise.reject(new Error('Connection terminated')) : Promise.resolve(pcm),
    ).assemble(task, 'worker_1', new AbortController().signal);
    await expect(assembly).rejects.toThrow('Connection terminated');
    expect(await liveFlacEncoders()).toBe(before);
  });

  it('and once on an assembly that completes', async () => {
    const before = await liveFlacEncoders();
    const audio = await assembler(() => Promise.resolve(pcm)).assemble(task, 'worker_1', new AbortController().signal);
    expect(audio).toMatchObject({ format: 'flac', duration_ms: 1500 });
    expect(await liveFlacEncoders()).toBe(before);
  });
});

describe('TaskAssembler: the audio cap of an async task', () => {
  it('fails the task with audio_too_long when its stored audio is over SVC_MAX_TASK_AUDIO_SECONDS', async () => {
    const repository = {
      chunkSummary: () =>
        Promise.resolve({ count: CHUNKS, bytes: CHUNKS * pcm.length, providers: [{ provider: 'espeak', level: 0 }] }),
    };
    const capped = new TaskAssembler(
      repository as unknown as SpeechTasksRepository,
      { SVC_TASK_TTL: 3600, SVC_MAX_TASK_AUDIO_SECONDS: 1 } as EnvironmentVariables,
    );
    // three half-second chunks: 1.5 s
    await expect(capped.assemble(task, 'worker_1', new AbortController().signal)).rejects.toMatchObject({
      code: 'audio_too_long',
      status: 413,
    });
  });
});

describe('TaskAssembler: progress counts the assembly (issue 17.6)', () => {
  it('reports rising progress between chunks, below every character, and only completion reaches all of them', async () => {
    const longTask: ClaimedTask = {
      ...task,
      plan: Array.from({ length: CHUNKS }, () => ({ text: 'A sentence.', chars: 300 })),
    };
    const progress: number[] = [];
    const completed: string[] = [];
    await assembler(() => Promise.resolve(pcm), progress, completed).assemble(
      longTask,
      'worker_1',
      new AbortController().signal,
    );
    // after each chunk but the last (the last one's count is the completion itself)
    expect(progress).toEqual([700, 800]);
    expect(progress.every((done) => done < 900)).toBe(true);
    expect(completed).toEqual(['task_1']);
  });
});
