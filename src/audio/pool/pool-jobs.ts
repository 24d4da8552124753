import type { CallSignal } from '../../common/call-signal';
import { DomainError } from '../../common/errors/domain-error';
import { encodePcm16le } from '../pcm';
import type { PcmShape, TranscodeOutput } from '../transcoder';
import { AudioJobError, AudioPool, NO_KEY, type AudioPoolOptions, type JobListener } from './audio-pool';
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

/** Seconds a client refused with `busy` is asked to wait: the pool frees slots as jobs end, often within one. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/** Whose job it is, and the caller's deadline, which must not run while the job waits for a worker. */
export interface JobOwner {
  /** The key the job works for: keys take turns for the pool's slots. */
  key: string;
  /** Stopped while the job waits for a worker, started whole when one takes it (decisions §11). */
  deadline?: { hold(): void; restart(): void };
}

/** The owner of a provider call's job (its context's key and step deadline). */
export function jobOwner(ctx: { keyId?: string; deadline?: JobOwner['deadline'] }): JobOwner {
  return { key: ctx.keyId ?? NO_KEY, ...(ctx.deadline ? { deadline: ctx.deadline } : {}) };
}

/**
 * The cap and a full pool as the caller's errors (413, 503 `busy` with Retry-After: the gateway's own verdicts, no
 * engine's failure); the other failures stay AudioJobError (an adapter decides what they mean upstream).
 */
function callerError(err: AudioJobError): Error {
  if (err.code === 'audio_too_long') return new DomainError('audio_too_long', err.message);
  if (err.code === 'busy')
    return new DomainError('busy', err.message, { headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) } });
  return err;
}

/** `pool.start` with the owner's key and deadline; a refusal (full queue) as the caller's error. */
function startJob(pool: AudioPool, spec: JobSpec, listener: JobListener, owner?: JobOwner): number {
  const deadline = owner?.deadline;
  const full: JobListener = deadline
    ? { ...listener, queued: () => deadline.hold(), taken: () => deadline.restart() }
    : listener;
  try {
    return pool.start(spec, full, owner?.key ?? NO_KEY);
  } catch (err) {
    throw err instanceof AudioJobError ? callerError(err) : err;
  }
}

/** A generated job's slices as they come; each one taken grants the worker one more, so it never runs far ahead. */
export async function* generate(
  spec: SpeechJobSpec,
  signal?: CallSignal,
  pool: AudioPool = audioPool(),
  owner?: JobOwner,
): AsyncGenerator<Buffer> {
  const slices: Buffer[] = [];
  let done = false;
  let error: AudioJobError | null = null;
  let wake: (() => void) | null = null;
  const notify = (): void => {
    wake?.();
    wake = null;
  };
  const id = startJob(
    pool,
    spec,
    {
      slice: (data) => (slices.push(data), notify()),
      output: () => undefined,
      done: () => ((done = true), notify()),
      failed: (err) => ((error = err), notify()),
    },
    owner,
  );
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
    startJob(pool, spec, {
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
    owner?: JobOwner,
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
    this.id = startJob(pool, spec, listener, owner);
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
  options: { gain?: number; maxSeconds?: number; owner?: JobOwner } = {},
): AsyncGenerator<Buffer> {
  const { owner, ...settings } = options;
  const codec = new RemoteCodec({ kind: 'transcode', from, output, ...settings }, audioPool(), owner);
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
export function openEncoder(options: Omit<EncodeJobSpec, 'kind'>, pool?: AudioPool, owner?: JobOwner): StreamEncoder {
  if (options.format === 'pcm') {
    return {
      push: (samples) => Promise.resolve(encodePcm16le(samples)),
      end: () => Promise.resolve(Buffer.alloc(0)),
      release: () => undefined,
    };
  }
  const codec = new RemoteCodec({ kind: 'encode', ...options }, pool, owner);
  return {
    push: (samples) => codec.push(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength)),
    end: () => codec.end(),
    release: () => codec.release(),
  };
}
