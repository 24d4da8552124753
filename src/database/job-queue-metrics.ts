import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { withTimeout } from '../common/with-timeout';
import { MetricsService } from '../metrics/metrics.service';
import { JobQueue } from './job-queue';

/** A scrape never waits longer than this on the database; the depth series are left out instead. */
const QUEUE_QUERY_TIMEOUT_MS = 1000;

/** The depth of every durable queue this process created, one count per queue when /metrics is scraped. */
@Injectable()
export class JobQueueMetrics implements OnModuleInit {
  private readonly logger = new Logger(JobQueueMetrics.name);

  constructor(
    private readonly metrics: MetricsService,
    private readonly queue: JobQueue,
  ) {}

  onModuleInit(): void {
    const queue = this.queue;
    const logger = this.logger;
    const depth = (name: string): Promise<number> => withTimeout(queue.queueSize(name), QUEUE_QUERY_TIMEOUT_MS);
    new Gauge({
      name: 'svc_queue_depth',
      help: 'Jobs waiting in each durable queue (speech-tasks, webhook-deliveries), shared by every replica.',
      labelNames: ['queue'],
      registers: [this.metrics.registry],
      async collect() {
        this.reset();
        try {
          const names = queue.queueNames();
          const sizes = await Promise.all(names.map(depth));
          names.forEach((name, i) => this.set({ queue: name }, sizes[i]));
        } catch (err) {
          logger.warn(`queue depth not collected: ${(err as Error).message}`);
        }
      },
    });
  }
}
