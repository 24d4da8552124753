import { Global, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import { defaultJobsPerKey, type AudioPool, type AudioPoolOptions } from './pool/audio-pool';
import { acquireAudioPool, releaseAudioPool } from './pool/pool-jobs';

/** Holds the process's audio worker pool for the app's life: made at boot from the environment, closed at shutdown. */
@Injectable()
export class AudioPoolHost implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AudioPool');
  private pool: AudioPool | null = null;
  private readonly options: AudioPoolOptions & { jobsPerKey: number };

  constructor(env: EnvironmentVariables) {
    const size = env.SVC_AUDIO_WORKERS;
    const jobsPerWorker = env.SVC_AUDIO_JOBS_PER_WORKER;
    this.options = {
      size,
      sliceTimeoutMs: env.SVC_AUDIO_SLICE_TIMEOUT_MS,
      jobsPerWorker,
      jobsPerKey: env.SVC_AUDIO_JOBS_PER_KEY ?? defaultJobsPerKey(size, jobsPerWorker),
      queuePerKey: env.SVC_AUDIO_QUEUE_PER_KEY,
      maxWaitMs: env.SVC_AUDIO_QUEUE_WAIT_MS,
    };
  }

  /** Audio jobs one key may run at once: what one key's speech streams are sized to (SVC_WS_MAX_STREAMS_PER_KEY's default). */
  get jobsPerKey(): number {
    return this.options.jobsPerKey;
  }

  onModuleInit(): void {
    this.pool = acquireAudioPool(this.options);
    this.logger.log(`audio work runs in up to ${this.pool.size} worker process(es), started on first use`);
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.pool) return;
    this.pool = null;
    await releaseAudioPool();
  }
}

@Global()
@Module({ providers: [AudioPoolHost], exports: [AudioPoolHost] })
export class AudioModule {}
