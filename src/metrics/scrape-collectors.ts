import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { withTimeout } from '../common/with-timeout';
import { GatewayConfig } from '../config/gateway-config';
import { JobQueue } from '../database/job-queue';
import type { BreakerStatus } from '../failover/circuit-breaker';
import { CircuitRegistry } from '../failover/circuit-registry';
import { SPEECH_TASK_QUEUE } from '../speech/tasks/task-queue';
import { WEBHOOK_QUEUE } from '../webhooks/delivery-queue';
import { MetricsService } from './metrics.service';

const BREAKER_STATES: BreakerStatus[] = ['healthy', 'degraded', 'recovering', 'down'];
const QUEUES = [SPEECH_TASK_QUEUE, WEBHOOK_QUEUE];
/** A scrape never waits longer than this on the database; the depth series are left out instead. */
const QUEUE_QUERY_TIMEOUT_MS = 1000;

/** Metrics read when /metrics is scraped: circuits from memory, queue depth with one count per queue. */
@Injectable()
export class ScrapeCollectors implements OnModuleInit {
  private readonly logger = new Logger(ScrapeCollectors.name);

  constructor(
    private readonly metrics: MetricsService,
    private readonly circuits: CircuitRegistry,
    private readonly gateway: GatewayConfig,
    private readonly queue: JobQueue,
  ) {}

  onModuleInit(): void {
    const registers = [this.metrics.registry];
    const circuits = this.circuits;
    const providers = this.gateway.providers.map((p) => p.name);
    new Gauge({
      name: 'svc_circuit_state',
      help: "Each provider's circuit breaker as this replica sees it: 1 for its current state, 0 for the others.",
      labelNames: ['provider', 'state'],
      registers,
      collect() {
        const now = Date.now();
        for (const provider of providers) {
          const { status } = circuits.view(provider, now);
          for (const state of BREAKER_STATES) this.set({ provider, state }, state === status ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'svc_circuit_consecutive_failures',
      help: "Consecutive failures counted by each provider's circuit breaker.",
      labelNames: ['provider'],
      registers,
      collect() {
        const now = Date.now();
        for (const provider of providers) this.set({ provider }, circuits.view(provider, now).consecutive_failures);
      },
    });
    const depth = (name: string): Promise<number> => withTimeout(this.queue.queueSize(name), QUEUE_QUERY_TIMEOUT_MS);
    const logger = this.logger;
    new Gauge({
      name: 'svc_queue_depth',
      help: 'Jobs waiting in each durable queue (speech-tasks, webhook-deliveries), shared by every replica.',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        try {
          const sizes = await Promise.all(QUEUES.map(depth));
          QUEUES.forEach((queue, i) => this.set({ queue }, sizes[i]));
        } catch (err) {
          logger.warn(`queue depth not collected: ${(err as Error).message}`);
        }
      },
    });
  }
}
