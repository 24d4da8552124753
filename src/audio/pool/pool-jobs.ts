import type { CallSignal } from '../../common/call-signal';
import { DomainError } from '../../common/errors/domain-error';
import { encodePcm16le } from '../pcm';
import type { PcmShape, TranscodeOutput } from '../transcoder';
import { AudioJobError, AudioPool, type AudioPoolOptions, type JobListener } from './audio-pool';
import type { EncodeJobSpec, JobSpec, SpeechJobSpec, TranscodeJobSpec } from './protocol';

let shared: AudioPool | null = null;
let holders = 0;

/** The process's pool, made with defaults on first use when nobody configured it (unit tests, tools). */
export function audioPool(): AudioPool {
  shared ??= new AudioPool();
  return shared;
}

/** The pool if one exists (metrics read it without starting one). */
export function currentAudioPool(): AudioPool | null {
  return shared;
}

/** Takes a share of the process's pool, made with `options` by the first holder (two apps in one test process share it). */
export function acquireAudioPool(options: AudioPoolOptions): AudioPool {
  shared ??= new AudioPool(options);
  holders += 1;
  return shared;
}

/** Gives a share back; the last holder closes the pool and its workers. */
export async function releaseAudioPool(): Promise<void> {
  holders = Math.max(0, holders - 1);
  if (holders > 0 || !shared) return;
  const pool = shared;
  shared = null;
  await pool.close();
}

/** The cap as the caller's error; the other failures stay AudioJobError (an adapter decides what they mean upstream). */
function callerError(err: AudioJobError): Error {
  return err.code === 'audio_too_long' ? new DomainError('audio_too_long', err.message) : err;
}

/** A generated job's slices as they come; each one taken grants the worker one more, so it never runs far ahead. */
export async function* generate(
  spec: SpeechJobSpec,
  signal?: CallSignal,
  pool: AudioPool = audioPool(),
): AsyncGenerator<Buffer> {
  const slices: Buffer[] = [];
  let done = false;
  let error: AudioJobError | null = null;
  let wake: (() => void) | null = null;
  const notify = (): void => {
    wake?.();
    wake = null;
  };
  const id = pool.start(spec, {
    slice: (data) => (slices.push(data), notify()),
    output: () => undefined,
    done: () => ((done = true), notify()),
    failed: (err) => ((error = err), notify()),
  });
  const onAbort = (): void => (pool.cancel(id), notify());
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const slice = slices.shift();
      if (slice) {
        pool.send(id, { t: 'credit', id, n: 1 });
        yield slice;
        continue;
      }
      if (error) throw callerError(error);
      if (done || signal?.aborted) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // stopped early (consumer left, abort): the worker drops the job and its encoder
    if (!done && !error) pool.cancel(id);
  }
}

/** A job that returns one result (the voice list). */
export function runJob<T>(spec: JobSpec, pool: AudioPool = audioPool()): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    pool.start(spec, {
      slice: () => undefined,
      output: () => undefined,
      done: (result) => resolve(result as T),
      failed: (err) => reject(callerError(err)),
    });
  });
}

/** A fed job from the caller's side: each `push` resolves with the bytes that input produced; `end` with the tail. */
export class RemoteCodec {
  private readonly pending: { resolve: (data: Buffer) => void; reject: (err: Error) => void }[] = [];
  private error: Error | null = null;
  private finished = false;
  private readonly id: number;

  constructor(
    spec: TranscodeJobSpec | EncodeJobSpec,
    private readonly pool: AudioPool = audioPool(),
  ) {
    const listener: JobListener = {
      slice: () => undefined,
      output: (data) => this.pending.shift()?.resolve(data),
      done: () => (this.finished = true),
      failed: (err) => {
        this.error = callerError(err);
        this.finished = true;
        for (const waiter of this.pending.splice(0)) waiter.reject(this.error);
      },
    };
    this.id = pool.start(spec, listener);
  }

  push(data: Uint8Array): Promise<Buffer> {
    return this.ask({ t: 'input', id: this.id, data });
  }

  end(): Promise<Buffer> {
    return this.ask({ t: 'end', id: this.id });
  }

  /** Cut short (consumer left, source failed): the worker drops the job and releases its encoder. */
  release(): void {
    if (this.finished) return;
    this.finished = true;
    this.pool.cancel(this.id);
    for (const waiter of this.pending.splice(0))
      waiter.reject(new AudioJobError('closed', 'the audio job was cancelled'));
  }

  private ask(message: { t: 'input'; id: number; data: Uint8Array } | { t: 'end'; id: number }): Promise<Buffer> {
    if (this.error) return Promise.reject(this.error);
    if (this.finished) return Promise.reject(new AudioJobError('closed', 'the audio job has ended'));
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.pool.send(this.id, message);
    });
  }
}

/** Raw s16le bytes in, `output` bytes out, transcoded in a worker; pulls the source only as fast as its consumer reads. */
export async function* transcodeStream(
  source: AsyncIterable<Buffer>,
  from: PcmShape,
  output: TranscodeOutput,
  options: { gain?: number; maxSeconds?: number } = {},
): AsyncGenerator<Buffer> {
  const codec = new RemoteCodec({ kind: 'transcode', from, output, ...options });
  let ended = false;
  try {
    for await (const chunk of source) {
      const bytes = await codec.push(chunk);
      if (bytes.length > 0) yield bytes;
    }
    ended = true;
    const tail = await codec.end();
    if (tail.length > 0) yield tail;
  } finally {
    if (!ended) codec.release();
  }
}

/** An incremental encoder whose work runs in a worker; `release` drops one cut short. */
export interface StreamEncoder {
  push(samples: Int16Array): Promise<Buffer>;
  end(): Promise<Buffer>;
  release(): void;
}

/** pcm costs no CPU (a copy), so it stays here; mp3 and FLAC encode in a worker. */
export function openEncoder(options: Omit<EncodeJobSpec, 'kind'>, pool?: AudioPool): StreamEncoder {
  if (options.format === 'pcm') {
    return {
      push: (samples) => Promise.resolve(encodePcm16le(samples)),
      end: () => Promise.resolve(Buffer.alloc(0)),
      release: () => undefined,
    };
  }
  const codec = new RemoteCodec({ kind: 'encode', ...options }, pool);
  return {
    push: (samples) => codec.push(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength)),
    end: () => codec.end(),
    release: () => codec.release(),
  };
}
