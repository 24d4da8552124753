import { Global, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import type { AudioPool } from './pool/audio-pool';
import { acquireAudioPool, releaseAudioPool } from './pool/pool-jobs';

/** Holds the process's audio worker pool for the app's life: made at boot from the environment, closed at shutdown. */
@Injectable()
export class AudioPoolHost implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AudioPool');
  private pool: AudioPool | null = null;

  constructor(private readonly env: EnvironmentVariables) {}

  onModuleInit(): void {
    this.pool = acquireAudioPool({
      size: this.env.SVC_AUDIO_WORKERS,
      sliceTimeoutMs: this.env.SVC_AUDIO_SLICE_TIMEOUT_MS,
    });
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
