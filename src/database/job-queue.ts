import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import PgBoss from 'pg-boss';
import type { Pool, QueryResult } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

export type JobHandler<T> = (job: PgBoss.Job<T>) => Promise<void>;

interface Executor {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

/** pg-boss runs on the app's own pg pool (one connection with the embedded database). */
const executorFor = (run: (text: string, values: unknown[]) => Promise<QueryResult | QueryResult[]>): Executor => ({
  async executeSql(text, values) {
    const result = await run(text, values);
    // a multi-statement text answers one result per statement; pg-boss reads the last
    return Array.isArray(result) ? (result[result.length - 1] ?? { rows: [] }) : result;
  },
});

/**
 * Durable jobs (async speech tasks, webhook deliveries) on pg-boss. Jobs survive restarts; a job
 * can be sent inside the transaction that creates its record, so neither exists without the other.
 */
@Injectable()
export class JobQueue implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(JobQueue.name);
  private readonly boss: PgBoss;
  private started = false;

  constructor(private readonly dataSource: DataSource) {
    const pool = (dataSource.driver as PostgresDriver).master as Pool;
    this.boss = new PgBoss({
      db: executorFor((text, values) => pool.query(text, values)),
      schema: 'pgboss',
      supervise: true,
      maintenanceIntervalSeconds: 60,
    });
    this.boss.on('error', (err: Error) => this.logger.warn(`job queue: ${err.message}`));
  }

  async onModuleInit(): Promise<void> {
    await this.boss.start();
    this.started = true;
  }

  async createQueue(name: string, options: Omit<PgBoss.Queue, 'name'> = {}): Promise<void> {
    if (!(await this.boss.getQueue(name))) await this.boss.createQueue(name, { name, ...options });
    else await this.boss.updateQueue(name, { name, ...options });
  }

  /** Sends a job; with `manager` it is written in that transaction. */
  async send<T extends object>(name: string, data: T, options: PgBoss.SendOptions = {}, manager?: EntityManager): Promise<string | null> {
    const db = manager ? executorFor((text, values) => manager.query(text, values).then((rows: unknown[]) => ({ rows }) as QueryResult)) : undefined;
    return this.boss.send(name, data, { ...options, ...(db ? { db } : {}) });
  }

  async work<T>(name: string, options: PgBoss.WorkOptions, handler: JobHandler<T>): Promise<void> {
    await this.boss.work<T>(name, { batchSize: 1, ...options }, async ([job]) => {
      if (job) await handler(job);
    });
  }

  /** True from start until shutdown begins (readiness). */
  get running(): boolean {
    return this.started;
  }

  /** Jobs of a queue not yet done (for metrics and readiness). */
  async queueSize(name: string): Promise<number> {
    return this.boss.getQueueSize(name);
  }

  /** Stops taking jobs; running handlers get up to `timeoutMs` to reach a safe point. */
  async onApplicationShutdown(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, wait: true, timeout: 10000 }).catch((err: Error) => this.logger.warn(`job queue stop: ${err.message}`));
  }
}
