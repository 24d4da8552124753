import type { Counter } from 'prom-client';

/** Labels of `svc_http_requests_total`. */
export type RequestLabel = 'method' | 'route' | 'status' | 'provider';

interface Cell {
  readonly labels: Record<RequestLabel, string>;
  n: number;
}

interface RouteCells {
  readonly method: string;
  readonly route: string;
  readonly byStatus: Map<number, Map<string, Cell>>;
  readonly latency: LatencyCells;
}

/** Upper bounds, in seconds, of `svc_http_request_duration_seconds`. */
export const REQUEST_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** One route's latencies in plain numbers: how many fell in each bucket (not cumulative; +Inf last) and their sum. */
class LatencyCells {
  readonly counts = new Float64Array(REQUEST_SECONDS_BUCKETS.length + 1);
  sum = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < REQUEST_SECONDS_BUCKETS.length && seconds > REQUEST_SECONDS_BUCKETS[i]) i++;
    this.counts[i] += 1;
    this.sum += seconds;
  }
}

/** One sample of a histogram's exposition, as prom-client's registry prints it. */
export interface HistogramSample {
  metricName: string;
  labels: Record<string, string>;
  value: number;
}

/** The Express route that handled a request: one object per registered handler. */
export interface RouteLike {
  path?: unknown;
}

export const UNMATCHED_ROUTE = 'unmatched';
export const NO_PROVIDER = 'none';
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Requests by method, route, status and provider, counted in plain numbers: after a route's first
 * request, counting one is three map lookups and an increment (no label hashing, no allocation).
 * prom-client reads the numbers only when /metrics is scraped.
 */
export class RequestCounter {
  /** null: a catch-all route (a middleware's `{*path}`), which names no endpoint. */
  private readonly routes = new Map<object, RouteCells | null>();
  private readonly unmatched = new Map<string, RouteCells>();

  /**
   * One finished request; `provider` is its `x-svc-provider-used` (anything else counts as none), `arrivedAt` the
   * epoch milliseconds it arrived at (its latency is not counted without one).
   */
  count(method: string, route: RouteLike | undefined, status: number, servedBy: unknown, arrivedAt?: unknown): void {
    const cells = (route && this.routeCells(route, method)) ?? this.unmatchedCells(method);
    if (typeof arrivedAt === 'number') cells.latency.observe((Date.now() - arrivedAt) / 1000);
    let byProvider = cells.byStatus.get(status);
    if (!byProvider) {
      byProvider = new Map();
      cells.byStatus.set(status, byProvider);
    }
    const provider = typeof servedBy === 'string' ? servedBy : NO_PROVIDER;
    let cell = byProvider.get(provider);
    if (!cell) {
      cell = { labels: { method: cells.method, route: cells.route, status: String(status), provider }, n: 0 };
      byProvider.set(provider, cell);
    }
    cell.n += 1;
  }

  /** Copies the numbers into the prom-client counter (its collect() callback, at scrape time). */
  exportTo(counter: Counter<RequestLabel>): void {
    counter.reset();
    for (const cells of [...this.routes.values(), ...this.unmatched.values()]) {
      if (!cells) continue;
      for (const byProvider of cells.byStatus.values()) {
        for (const cell of byProvider.values()) counter.inc(cell.labels, cell.n);
      }
    }
  }

  /** The latency histogram's samples (`name`_bucket, _sum, _count by method and route), read at scrape time. */
  latencySamples(name: string): HistogramSample[] {
    const samples: HistogramSample[] = [];
    for (const cells of [...this.routes.values(), ...this.unmatched.values()]) {
      if (!cells) continue;
      const labels = { method: cells.method, route: cells.route };
      let cumulative = 0;
      cells.latency.counts.forEach((n, i) => {
        cumulative += n;
        const le = i < REQUEST_SECONDS_BUCKETS.length ? String(REQUEST_SECONDS_BUCKETS[i]) : '+Inf';
        samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      samples.push({ metricName: `${name}_sum`, labels, value: cells.latency.sum });
      samples.push({ metricName: `${name}_count`, labels, value: cumulative });
    }
    return samples;
  }

  /** A handler's route is registered for one method, so its method label is taken from its first request. */
  private routeCells(route: RouteLike, method: string): RouteCells | null {
    let cells = this.routes.get(route);
    if (cells === undefined) {
      const path = route.path;
      cells =
        typeof path === 'string' && !path.includes('*')
          ? { method: methodLabel(method), route: path, byStatus: new Map(), latency: new LatencyCells() }
          : null;
      this.routes.set(route, cells);
    }
    return cells;
  }

  /** Unknown paths are one series per method (never the raw URL: its values are unbounded). */
  private unmatchedCells(method: string): RouteCells {
    const label = methodLabel(method);
    let cells = this.unmatched.get(label);
    if (!cells) {
      cells = { method: label, route: UNMATCHED_ROUTE, byStatus: new Map(), latency: new LatencyCells() };
      this.unmatched.set(label, cells);
    }
    return cells;
  }
}

const methodLabel = (method: string): string => (KNOWN_METHODS.has(method) ? method : 'OTHER');

/**
 * Counts by two label values (a failover's `from` and `to`) in plain numbers, like RequestCounter: after
 * a pair's first count, two map lookups and an increment; prom-client reads them at scrape time.
 */
export class PairCounter<A extends string, B extends string> {
  private readonly cells = new Map<string, Map<string, { labels: Record<A | B, string>; n: number }>>();

  constructor(
    private readonly first: A,
    private readonly second: B,
  ) {}

  count(a: string, b: string): void {
    let byB = this.cells.get(a);
    if (!byB) {
      byB = new Map();
      this.cells.set(a, byB);
    }
    let cell = byB.get(b);
    if (!cell) {
      cell = { labels: { [this.first]: a, [this.second]: b } as Record<A | B, string>, n: 0 };
      byB.set(b, cell);
    }
    cell.n += 1;
  }

  /** Copies the numbers into the prom-client counter (its collect() callback, at scrape time). */
  exportTo(counter: Counter<A | B>): void {
    counter.reset();
    for (const byB of this.cells.values()) for (const cell of byB.values()) counter.inc(cell.labels, cell.n);
  }
}
