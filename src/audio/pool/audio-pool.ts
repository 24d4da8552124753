import { fork, type ChildProcess } from 'node:child_process';
import { cpus, setPriority } from 'node:os';
import { DEFAULT_CREDIT, type FromWorker, type JobErrorCode, type JobSpec, type ToWorker } from './protocol';
import { KeyQueues } from './key-queues';
import { workerExecArgv, workerScript } from './worker-script';

export interface AudioPoolOptions {
  /** Worker processes (default: one less than the cores, at least 1). */
  size?: number;
  /** A worker whose slice runs longer than this (it answers no ping) is killed with its jobs. */
  sliceTimeoutMs?: number;
  /** Jobs one worker holds at once (a FLAC stream session holds one for its whole task); more wait in the pool's queue. */
  jobsPerWorker?: number;
  /** Jobs one key may hold running at once (default: half the pool's slots, at least 1): the rest are the others'. */
  jobsPerKey?: number;
  /** Jobs one key may have waiting; past it a job is refused at once with `busy`. */
  queuePerKey?: number;
  /** How long a job may wait for a worker before it fails with `busy`. */
  maxWaitMs?: number;
  /** Slices a generated job may send ahead of its consumer. */
  credit?: number;
  /** The worker entry (compiled JavaScript); tests may point elsewhere. */
  script?: string;
}

export interface AudioPoolStats {
  workers: number;
  running: number;
  queued: number;
}

/** Jobs started without a key (the voice list, stats) share this queue. */
export const NO_KEY = '';

/** Why a pool job failed: the worker's verdict, or `crashed` when its process died (killed, out of memory, runaway). */
export class AudioJobError extends Error {
  constructor(
    /** `busy`: the job was refused or waited past the bound for a worker (a local overload, no engine's fault). */
    readonly code: JobErrorCode | 'crashed' | 'closed' | 'busy',
    message: string,
  ) {
    super(message);
    this.name = 'AudioJobError';
  }
}

/** What the main side of one job hears from its worker. */
export interface JobListener {
  slice(data: Buffer): void;
  output(data: Buffer): void;
  done(result: unknown): void;
  failed(error: AudioJobError): void;
  /** The job has to wait for a worker (called from `start`), then `taken` once one takes it: a deadline starts there. */
  queued?(): void;
  taken?(): void;
}

interface QueuedJob {
  id: number;
  key: string;
  spec: JobSpec;
  listener: JobListener;
}

interface Worker {
  child: ChildProcess;
  ready: boolean;
  backlog: ToWorker[];
  jobs: Map<number, JobListener>;
  /** When the oldest unanswered ping went out (null: none outstanding). */
  pingSentAt: number | null;
  killedFor: string | null;
}

export const DEFAULT_SLICE_TIMEOUT_MS = 30_000;
export const DEFAULT_JOBS_PER_WORKER = 32;
export const DEFAULT_QUEUE_PER_KEY = 32;
export const DEFAULT_MAX_WAIT_MS = 10_000;

/** Running jobs one key may hold when not configured: half the pool's slots, so another key always finds one. */
export function defaultJobsPerKey(size: number, jobsPerWorker: number): number {
  return Math.max(1, Math.floor((size * jobsPerWorker) / 2));
}
/** Workers yield the CPU to the process that serves requests (nice 19): speech gets slower under load, health checks and chat do not. */
const WORKER_NICE = 19;

export function defaultPoolSize(): number {
  return Math.max(1, cpus().length - 1);
}

/** A pool of worker processes for synthesis, resampling and encoding: the event loop of the gateway only moves bytes. */
export class AudioPool {
  readonly size: number;
  readonly sliceTimeoutMs: number;
  readonly credit: number;
  readonly jobsPerKey: number;
  readonly queuePerKey: number;
  readonly maxWaitMs: number;
  private readonly jobsPerWorker: number;
  private readonly script: string;
  private readonly workers = new Set<Worker>();
  /** The jobs waiting for a slot, and each key's running count (the turns between keys are theirs). */
  private readonly queues: KeyQueues<QueuedJob>;
  private readonly owner = new Map<number, { worker: Worker; key: string }>();
  private nextId = 1;
  private pingSeq = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(options: AudioPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? defaultPoolSize());
    this.sliceTimeoutMs = options.sliceTimeoutMs ?? DEFAULT_SLICE_TIMEOUT_MS;
    // jobs take turns between slices: this bounds a worker's memory (an encoder each) and how many turns a job
    // that a worker took waits for its first slice (its deadline runs from the take)
    this.jobsPerWorker = Math.max(1, options.jobsPerWorker ?? DEFAULT_JOBS_PER_WORKER);
    this.jobsPerKey = Math.max(1, options.jobsPerKey ?? defaultJobsPerKey(this.size, this.jobsPerWorker));
    this.queuePerKey = Math.max(0, options.queuePerKey ?? DEFAULT_QUEUE_PER_KEY);
    this.maxWaitMs = Math.max(1, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
    this.credit = options.credit ?? DEFAULT_CREDIT;
    this.script = options.script ?? workerScript();
    // a job that waited past the bound: a local overload, answered `busy` (never the engine's failure)
    this.queues = new KeyQueues<QueuedJob>(this.jobsPerKey, this.queuePerKey, this.maxWaitMs, (job) =>
      job.listener.failed(this.busy(`the audio job waited ${this.maxWaitMs} ms for a worker`)),
    );
  }

  stats(): AudioPoolStats {
    return { workers: this.workers.size, running: this.owner.size, queued: this.queues.size };
  }

  /** Process ids of the live workers (operations and tests). */
  pids(): number[] {
    return [...this.workers].map((w) => w.child.pid ?? 0);
  }

  /** Process ids of the workers holding jobs now. */
  busyPids(): number[] {
    return [...this.workers].filter((w) => w.jobs.size > 0).map((w) => w.child.pid ?? 0);
  }

  /**
   * Starts a job of key `key` on the least loaded worker, or queues it in the key's queue (keys take turns for
   * free slots); returns its id. Throws `busy` when the key's queue is full; a job that waits past `maxWaitMs`
   * fails with `busy`.
   */
  start(spec: JobSpec, listener: JobListener, key: string = NO_KEY): number {
    if (this.closed) throw new AudioJobError('closed', 'the audio worker pool is closed');
    const id = this.nextId++;
    const job: QueuedJob = { id, key, spec, listener };
    this.queues.add(job);
    this.dispatch();
    if (this.owner.has(id)) return id;
    // it has to wait: refused when the key already has its bound of jobs waiting
    if (this.queues.overBound(job)) {
      this.queues.remove(id);
      throw this.busy(`${this.queuePerKey} audio jobs of this key are already waiting`);
    }
    this.queues.await(job);
    listener.queued?.();
    return id;
  }

  send(id: number, message: ToWorker): void {
    const owned = this.owner.get(id);
    if (owned) this.post(owned.worker, message);
  }

  /** Stops a job (its consumer left): the worker drops it and releases its encoder. */
  cancel(id: number): void {
    if (this.queues.remove(id)) return;
    const owned = this.owner.get(id);
    if (!owned) return;
    this.release(owned.worker, id);
    this.post(owned.worker, { t: 'cancel', id });
    this.dispatch();
  }

  private busy(why: string): AudioJobError {
    return new AudioJobError('busy', `The audio worker pool is full (${why}); retry shortly.`);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
    for (const job of this.queues.drain())
      job.listener.failed(new AudioJobError('closed', 'the audio worker pool closed'));
    await Promise.all(
      [...this.workers].map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.child.exitCode !== null || worker.child.signalCode !== null) return resolve();
            worker.child.once('exit', () => resolve());
            worker.child.kill('SIGTERM');
          }),
      ),
    );
  }

  /** Free slots go to the waiting keys in turn, each under its share (`jobsPerKey`). */
  private dispatch(): void {
    while (this.queues.size > 0) {
      const key = this.queues.nextKey();
      if (key === null) return;
      const worker = this.leastLoaded();
      if (!worker) return;
      const { job, waited } = this.queues.take(key);
      worker.jobs.set(job.id, job.listener);
      this.owner.set(job.id, { worker, key });
      // a worker with jobs keeps the process alive (a script awaiting one), an idle one never does
      worker.child.channel?.ref();
      this.post(worker, { t: 'start', id: job.id, spec: job.spec, credit: this.credit });
      // a job that had to wait (start armed its wait timer): its caller's deadline starts now
      if (waited) job.listener.taken?.();
    }
  }

  /** An idle worker first, a new one while below size, else the one with the fewest jobs under the cap. */
  private leastLoaded(): Worker | null {
    let best: Worker | null = null;
    for (const worker of this.workers) {
      if (worker.killedFor) continue;
      if (!best || worker.jobs.size < best.jobs.size) best = worker;
    }
    if ((!best || best.jobs.size > 0) && this.workers.size < this.size && !this.closed) return this.spawn();
    return best && best.jobs.size < this.jobsPerWorker ? best : null;
  }

  private spawn(): Worker {
    // 'advanced': Buffers and typed arrays cross as bytes, not as JSON arrays of numbers
    const child = fork(this.script, [], {
      execArgv: workerExecArgv(this.script),
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const worker: Worker = { child, ready: false, backlog: [], jobs: new Map(), pingSentAt: null, killedFor: null };
    try {
      if (child.pid !== undefined) setPriority(child.pid, WORKER_NICE);
    } catch {
      // not permitted here (some containers): the worker runs at the gateway's priority
    }
    this.workers.add(worker);
    // an idle worker never keeps the gateway (or a test run) alive: close() ends them at shutdown
    child.unref();
    child.channel?.unref();
    child.on('message', (message: FromWorker) => this.onMessage(worker, message));
    child.on('error', () => undefined); // 'exit' follows and does the accounting
    child.on('exit', (code, signal) => this.onExit(worker, code, signal));
    this.watchdog ??= setInterval(() => this.checkWorkers(), Math.max(10, Math.floor(this.sliceTimeoutMs / 4))).unref();
    return worker;
  }

  private post(worker: Worker, message: ToWorker): void {
    if (!worker.ready) return void worker.backlog.push(message);
    if (worker.child.connected) worker.child.send(message);
  }

  private onMessage(worker: Worker, message: FromWorker): void {
    if (message.t === 'ready') {
      worker.ready = true;
      for (const queued of worker.backlog.splice(0)) this.post(worker, queued);
      return;
    }
    if (message.t === 'pong') {
      worker.pingSentAt = null;
      return;
    }
    const listener = worker.jobs.get(message.id);
    if (!listener) return; // cancelled meanwhile
    switch (message.t) {
      case 'slice':
        return listener.slice(toBuffer(message.data));
      case 'output':
        return listener.output(toBuffer(message.data));
      case 'done':
        this.release(worker, message.id);
        return listener.done(message.result);
      case 'failed':
        this.release(worker, message.id);
        return listener.failed(new AudioJobError(message.code, message.message));
    }
  }

  private release(worker: Worker, id: number): void {
    worker.jobs.delete(id);
    this.forget(id);
    if (worker.jobs.size === 0) worker.child.channel?.unref();
    this.dispatch();
  }

  /** Only the dead worker's jobs fail; a replacement starts so the next job finds a live worker. */
  private onExit(worker: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    this.workers.delete(worker);
    const reason = worker.killedFor ?? `the audio worker exited (${signal ?? `code ${code}`})`;
    for (const [id, listener] of worker.jobs) {
      this.forget(id);
      listener.failed(new AudioJobError('crashed', reason));
    }
    worker.jobs.clear();
    if (this.closed) return;
    if (this.workers.size < this.size) this.spawn();
    this.dispatch();
  }

  /** The job no longer runs: its key's running count goes down. */
  private forget(id: number): void {
    const owned = this.owner.get(id);
    if (!owned) return;
    this.owner.delete(id);
    this.queues.ended(owned.key);
  }

  /** Pings busy workers; one that has not answered within the slice bound is stuck in a runaway slice. */
  private checkWorkers(): void {
    const now = Date.now();
    for (const worker of this.workers) {
      if (!worker.ready || worker.killedFor) continue;
      if (worker.pingSentAt !== null && now - worker.pingSentAt > this.sliceTimeoutMs) {
        worker.killedFor = `an audio job made no progress for ${this.sliceTimeoutMs} ms; its worker was replaced`;
        worker.child.kill('SIGKILL');
        continue;
      }
      if (worker.pingSentAt === null && worker.jobs.size > 0) {
        worker.pingSentAt = now;
        this.post(worker, { t: 'ping', seq: ++this.pingSeq });
      }
    }
  }
}

function toBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}
