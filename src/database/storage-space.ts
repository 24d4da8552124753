import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { statfs } from 'node:fs/promises';
import { DomainError } from '../common/errors/domain-error';
import { EnvironmentVariables } from '../config/env.schema';
import { DatabaseEndpoint } from './database-endpoint';
import { DatabaseStatus } from './database-status';

/** What a sample found: null while there is room, else why writes are refused. */
type Shortage = string | null;

/**
 * The free-space guard (decisions §11): writes of stored data (uploads, consents, audio links, async tasks)
 * are refused with `507 insufficient_storage` before the database runs out. It measures, every
 * SVC_STORAGE_SAMPLE_MS and never per request: the database's size (`pg_database_size`) against
 * SVC_STORAGE_BUDGET_BYTES when one is set (any database), and for the embedded database the free space of
 * its data directory's disk against SVC_STORAGE_MIN_FREE_BYTES. A failed sample keeps the last verdict.
 */
@Injectable()
export class StorageSpace implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(StorageSpace.name);
  private shortage: Shortage = null;
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;

  constructor(
    private readonly env: EnvironmentVariables,
    private readonly endpoint: DatabaseEndpoint,
    private readonly status: DatabaseStatus,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample(), this.env.SVC_STORAGE_SAMPLE_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sampling;
  }

  /** Throws `507 insufficient_storage` while the last sample found the database short of room. */
  assertRoom(): void {
    if (this.shortage)
      throw new DomainError(
        'insufficient_storage',
        `The gateway's storage is full (${this.shortage}): nothing new can be stored until an operator frees space.`,
      );
  }

  /** One measurement (overlapping calls share it). */
  sample(): Promise<void> {
    this.sampling ??= this.measure().finally(() => (this.sampling = null));
    return this.sampling;
  }

  private async measure(): Promise<void> {
    try {
      const shortage = (await this.overBudget()) ?? (await this.diskShort());
      if (shortage !== this.shortage)
        if (shortage) this.logger.warn(`stored-data writes refused (507): ${shortage}`);
        else this.logger.log('stored-data writes accepted again: the database has room');
      this.shortage = shortage;
    } catch (err) {
      this.logger.warn(`storage sample failed: ${(err as Error).message}; keeping the last verdict`);
    }
  }

  private async overBudget(): Promise<Shortage> {
    const budget = this.env.SVC_STORAGE_BUDGET_BYTES;
    if (budget <= 0) return null;
    const size = await this.status.databaseBytes();
    return size >= budget ? `the database holds ${size} bytes, its budget SVC_STORAGE_BUDGET_BYTES is ${budget}` : null;
  }

  private async diskShort(): Promise<Shortage> {
    const min = this.env.SVC_STORAGE_MIN_FREE_BYTES;
    if (!this.endpoint.isEmbedded || min <= 0) return null;
    const disk = await statfs(this.env.SVC_DATA_DIR);
    const free = disk.bavail * disk.bsize;
    return free < min ? `${free} bytes free for the database, SVC_STORAGE_MIN_FREE_BYTES is ${min}` : null;
  }
}
