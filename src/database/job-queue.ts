import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import PgBoss from 'pg-boss';
import type { QueryResult } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { MAINTENANCE_TIMEOUT_MS, withClientDeadline, withMaintenanceDeadline } from './maintenance-query';
import { pgPoolOf } from './pg-pool';

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

/** The results of a text wrapped by withMaintenanceDeadline, without those of its SET and RESET. */
const ownResults = (result: QueryResult | QueryResult[]): QueryResult | QueryResult[] => {
  const all = result as unknown as QueryResult[];
  return all.length === 3 ? all[1] : all.slice(1, -1);
};

/**
 * Durable jobs (async speech tasks, webhook deliveries) on pg-boss. Jobs survive restarts; a job
 * can be sent inside the transaction that creates its record, so neither exists without the other.
 */
@Injectable()
export class JobQueue implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(JobQueue.name);
  private readonly boss: PgBoss;
  private started = false;
  /** pg-boss's statements still running: the shutdown waits for them, so none meets a closed pool. */
  private readonly inFlight = new Set<Promise<unknown>>();
  /** The queues this process uses (its owners create them at start), in that order. */
  private readonly created = new Set<string>();
  /** Queues kept in their owner's own table (webhook deliveries): metrics ask the owner for their depth. */
  private readonly depthSources = new Map<string, () => Promise<number>>();

  constructor(private readonly dataSource: DataSource) {
    const pool = pgPoolOf(dataSource);
    const tracked = (text: string, values: unknown[]): Promise<QueryResult | QueryResult[]> => {
      // pg-boss's statements without parameters are its maintenance (archiving, expiring) and schema work:
      // off the request path and possibly long, so they run under the maintenance deadline
      const maintenance = !values || values.length === 0;
      const query = maintenance
        ? pool
            .query(withClientDeadline({ text: withMaintenanceDeadline(text) }, MAINTENANCE_TIMEOUT_MS))
            .then(ownResults)
        : pool.query(text, values);
      const settled = query.then(
        () => undefined,
        () => undefined,
      );
      this.inFlight.add(settled);
      void settled.then(() => this.inFlight.delete(settled));
      return query;
    };
    this.boss = new PgBoss({
      db: executorFor(tracked),
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
    this.created.add(name);
    if (!(await this.boss.getQueue(name))) await this.boss.createQueue(name, { name, ...options });
    else await this.boss.updateQueue(name, { name, ...options });
  }

  /** Sends a job; with `manager` it is written in that transaction. */
  async send<T extends object>(
    name: string,
    data: T,
    options: PgBoss.SendOptions = {},
    manager?: EntityManager,
  ): Promise<string | null> {
    const db = manager
      ? executorFor((text, values) => manager.query(text, values).then((rows: unknown[]) => ({ rows }) as QueryResult))
      : undefined;
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

  /** Reports a queue its owner keeps in its own table alongside pg-boss's, under `name`. */
  registerDepth(name: string, size: () => Promise<number>): void {
    this.depthSources.set(name, size);
  }

  /** The queues created by this process's modules (metrics report their depth). */
  queueNames(): string[] {
    return [...new Set([...this.created, ...this.depthSources.keys()])];
  }

  /** Jobs of a queue not yet done (for metrics and readiness). */
  async queueSize(name: string): Promise<number> {
    const own = this.depthSources.get(name);
    return own ? own() : this.boss.getQueueSize(name);
  }

  /**
   * Stops taking jobs; running handlers get up to 10 s to reach a safe point. Before every
   * onApplicationShutdown hook: the handlers (and pg-boss marking their jobs) still need the pool,
   * which TypeORM closes in its own onApplicationShutdown.
   */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss
      .stop({ graceful: true, wait: true, timeout: 10000 })
      .catch((err: Error) => this.logger.warn(`job queue stop: ${err.message}`));
    // a handler that failed while stopping has pg-boss mark its job right after: let those writes land
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(this.inFlight);
  }
}
