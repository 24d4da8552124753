import { fork, type ChildProcess } from 'node:child_process';
import { cpus, setPriority } from 'node:os';
import { DEFAULT_CREDIT, type FromWorker, type JobErrorCode, type JobSpec, type ToWorker } from './protocol';
import { workerExecArgv, workerScript } from './worker-script';

export interface AudioPoolOptions {
  /** Worker processes (default: one less than the cores, at least 1). */
  size?: number;
  /** A worker whose slice runs longer than this (it answers no ping) is killed with its jobs. */
  sliceTimeoutMs?: number;
  /** Jobs one worker holds at once (a FLAC stream session holds one for its whole task); more wait in the pool's queue. */
  jobsPerWorker?: number;
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

/** Why a pool job failed: the worker's verdict, or `crashed` when its process died (killed, out of memory, runaway). */
export class AudioJobError extends Error {
  constructor(
    readonly code: JobErrorCode | 'crashed' | 'closed',
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
  private readonly jobsPerWorker: number;
  private readonly script: string;
  private readonly workers = new Set<Worker>();
  private readonly queue: { id: number; spec: JobSpec; listener: JobListener }[] = [];
  private readonly owner = new Map<number, Worker>();
  private nextId = 1;
  private pingSeq = 0;
  private watchdog: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(options: AudioPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? defaultPoolSize());
    this.sliceTimeoutMs = options.sliceTimeoutMs ?? DEFAULT_SLICE_TIMEOUT_MS;
    // jobs take turns between slices, so this bounds a worker's memory (an encoder each), not its CPU
    this.jobsPerWorker = options.jobsPerWorker ?? 256;
    this.credit = options.credit ?? DEFAULT_CREDIT;
    this.script = options.script ?? workerScript();
  }

  stats(): AudioPoolStats {
    return { workers: this.workers.size, running: this.owner.size, queued: this.queue.length };
  }

  /** Process ids of the live workers (operations and tests). */
  pids(): number[] {
    return [...this.workers].map((w) => w.child.pid ?? 0);
  }

  /** Process ids of the workers holding jobs now. */
  busyPids(): number[] {
    return [...this.workers].filter((w) => w.jobs.size > 0).map((w) => w.child.pid ?? 0);
  }

  /** Starts a job on the least loaded worker (or queues it); returns its id. */
  start(spec: JobSpec, listener: JobListener): number {
    if (this.closed) throw new AudioJobError('closed', 'the audio worker pool is closed');
    const id = this.nextId++;
    this.queue.push({ id, spec, listener });
    this.dispatch();
    return id;
  }

  send(id: number, message: ToWorker): void {
    const worker = this.owner.get(id);
    if (worker) this.post(worker, message);
  }

  /** Stops a job (its consumer left): the worker drops it and releases its encoder. */
  cancel(id: number): void {
    const queued = this.queue.findIndex((job) => job.id === id);
    if (queued >= 0) this.queue.splice(queued, 1);
    const worker = this.owner.get(id);
    if (!worker) return;
    this.release(worker, id);
    this.post(worker, { t: 'cancel', id });
    this.dispatch();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
    for (const job of this.queue.splice(0))
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

  private dispatch(): void {
    while (this.queue.length > 0) {
      const worker = this.leastLoaded();
      if (!worker) return;
      const job = this.queue.shift()!;
      worker.jobs.set(job.id, job.listener);
      this.owner.set(job.id, worker);
      // a worker with jobs keeps the process alive (a script awaiting one), an idle one never does
      worker.child.channel?.ref();
      this.post(worker, { t: 'start', id: job.id, spec: job.spec, credit: this.credit });
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
    this.owner.delete(id);
    if (worker.jobs.size === 0) worker.child.channel?.unref();
    this.dispatch();
  }

  /** Only the dead worker's jobs fail; a replacement starts so the next job finds a live worker. */
  private onExit(worker: Worker, code: number | null, signal: NodeJS.Signals | null): void {
    this.workers.delete(worker);
    const reason = worker.killedFor ?? `the audio worker exited (${signal ?? `code ${code}`})`;
    for (const [id, listener] of worker.jobs) {
      this.owner.delete(id);
      listener.failed(new AudioJobError('crashed', reason));
    }
    worker.jobs.clear();
    if (this.closed) return;
    if (this.workers.size < this.size) this.spawn();
    this.dispatch();
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
