import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { ServerResponse } from 'node:http';
import { startTime } from 'pino-http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { currentAudioPool } from '../audio/pool/pool-jobs';
import { PairCounter, RequestCounter, RequestLabel, RouteLike } from './request-counter';

/** Outcomes of one webhook delivery attempt, as the delivery worker records it. */
export type DeliveryStatus = 'succeeded' | 'pending' | 'failed';
/** How an async speech task's run ended. */
export type TaskOutcome = 'completed' | 'failed' | 'interrupted';

type LatencyChild = ReturnType<Histogram<'provider' | 'outcome'>['labels']>;

const PROVIDER_HEADER = 'x-svc-provider-used';
const UPSTREAM_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const TASK_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600];
const DELIVERY_OUTCOMES: Record<DeliveryStatus, string> = {
  succeeded: 'delivered',
  pending: 'retry_scheduled',
  failed: 'failed',
};

/**
 * The one Prometheus registry of the process and the small API other modules record through.
 * Everything on the request path is an increment of a number or of a cached label child; what
 * needs a lookup elsewhere (circuits, queue depth) is read when /metrics is scraped.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests = new RequestCounter();
  private readonly upstreamSeconds: Histogram<'provider' | 'outcome'>;
  private readonly upstreamChildren = new Map<string, { ok: LatencyChild; error: LatencyChild }>();
  private readonly failovers = new PairCounter('from', 'to');
  private readonly deliveries: Counter<'outcome'>;
  private readonly sessions: Gauge;
  private readonly taskSeconds: Histogram<'outcome'>;
  /** Counts the response it is called on (`this`); one function for every request, so nothing is allocated per request. */
  private readonly countResponse: (this: ServerResponse) => void;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const requests = this.requests;
    new Counter<RequestLabel>({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by method, route template, status and serving provider (x-svc-provider-used; "none" when no provider served).',
      labelNames: ['method', 'route', 'status', 'provider'],
      registers,
      collect() {
        requests.exportTo(this);
      },
    });
    this.registry.registerMetric(requestSeconds(requests));
    this.upstreamSeconds = new Histogram({
      name: 'svc_upstream_request_duration_seconds',
      help: 'Latency of each upstream attempt (to the first chunk for streams), by provider and outcome (ok, error).',
      labelNames: ['provider', 'outcome'],
      buckets: UPSTREAM_BUCKETS,
      registers,
    });
    const failovers = this.failovers;
    new Counter<'from' | 'to'>({
      name: 'svc_failovers_total',
      help: 'Requests served by a fallback step, by the provider that failed last (from) and the one that served (to).',
      labelNames: ['from', 'to'],
      registers,
      collect() {
        failovers.exportTo(this);
      },
    });
    this.deliveries = new Counter({
      name: 'svc_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered, retry_scheduled, failed (retries exhausted).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of Object.values(DELIVERY_OUTCOMES)) this.deliveries.inc({ outcome }, 0);
    this.sessions = new Gauge({
      name: 'svc_ws_sessions_open',
      help: 'Speech WebSocket sessions open on this replica.',
      registers,
    });
    this.taskSeconds = new Histogram({
      name: 'svc_speech_task_duration_seconds',
      help: 'How long a run of an async speech task took on this replica, by outcome (completed, failed, interrupted).',
      labelNames: ['outcome'],
      buckets: TASK_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'svc_audio_pool_jobs',
      help: 'Audio jobs (synthesis, transcoding, encoding) of this replica: running in a worker process, or queued for one.',
      labelNames: ['state'],
      registers,
      collect() {
        const stats = currentAudioPool()?.stats();
        this.set({ state: 'running' }, stats?.running ?? 0);
        this.set({ state: 'queued' }, stats?.queued ?? 0);
      },
    });
    new Gauge({
      name: 'svc_audio_workers_alive',
      help: 'Audio worker processes alive on this replica (started on first use, replaced when one dies).',
      registers,
      collect() {
        this.set(currentAudioPool()?.stats().workers ?? 0);
      },
    });
    this.countResponse = function (this: ServerResponse): void {
      requests.count(
        this.req.method ?? '',
        (this.req as { route?: RouteLike }).route,
        this.statusCode,
        this.getHeader(PROVIDER_HEADER),
        this[startTime],
      );
    };
  }

  /** Express middleware: every response is counted once when it closes (finished or cut off). */
  readonly httpMiddleware = (_req: Request, res: Response, next: NextFunction): void => {
    this.countOnClose(res);
    next();
  };

  /** Counts the response once when it closes; its request's `route` (an Express route, or the fast path's) names the series. */
  countOnClose(res: ServerResponse): void {
    res.on('close', this.countResponse);
  }

  upstreamAttempt(provider: string, ok: boolean, latencyMs: number): void {
    let children = this.upstreamChildren.get(provider);
    if (!children) {
      children = {
        ok: this.upstreamSeconds.labels(provider, 'ok'),
        error: this.upstreamSeconds.labels(provider, 'error'),
      };
      this.upstreamChildren.set(provider, children);
    }
    (ok ? children.ok : children.error).observe(latencyMs / 1000);
  }

  failover(from: string | null, to: string): void {
    this.failovers.count(from ?? 'none', to);
  }

  webhookAttempt(status: DeliveryStatus): void {
    this.deliveries.inc({ outcome: DELIVERY_OUTCOMES[status] });
  }

  sessionOpened(): void {
    this.sessions.inc();
  }

  sessionClosed(): void {
    this.sessions.dec();
  }

  taskRun(outcome: TaskOutcome, durationMs: number): void {
    this.taskSeconds.observe({ outcome }, durationMs / 1000);
  }

  /** The Prometheus text exposition of every metric (runs the scrape-time collectors). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * `svc_http_request_duration_seconds`: from a request's arrival (before its body is read) to its response's close,
 * by method and route. Its numbers live in RequestCounter's cells, so the request path adds a bucket increment and
 * no label hashing; prom-client's registry only calls get() when /metrics is scraped.
 */
function requestSeconds(requests: RequestCounter): Histogram {
  const name = 'svc_http_request_duration_seconds';
  const metric = {
    name,
    help: 'Time from a request arriving to its response closing (the last byte of a stream), by method and route template.',
    type: 'histogram',
    aggregator: 'sum',
    get: () =>
      Promise.resolve({
        name,
        help: metric.help,
        type: 'histogram',
        aggregator: 'sum',
        values: requests.latencySamples(name),
      }),
    reset: (): void => undefined,
  };
  return metric as unknown as Histogram;
}
