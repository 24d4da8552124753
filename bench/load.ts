import autocannon from 'autocannon';
import { performance } from 'node:perf_hooks';

/** One load run against one URL at a fixed number of concurrent keep-alive connections. */
export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  seconds: number;
  /** When set, every response must carry `x-svc-provider-used` with this value. */
  expectProvider?: string;
}

export interface LoadResult {
  /** Responses received (any status). */
  responses: number;
  seconds: number;
  rps: number;
  /** Milliseconds, with sub-millisecond precision (autocannon's own histogram keeps whole ms only). */
  p50: number;
  p99: number;
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  /** Responses without the expected `x-svc-provider-used`. */
  headerMismatches: number;
}

const PROVIDER_HEADER = 'x-svc-provider-used';
/** Latencies kept per run; far above what 2 cores serve in a cell, so nothing is dropped in practice. */
const MAX_SAMPLES = 1_000_000;

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function headerValue(flat: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i].toLowerCase() === name) return flat[i + 1];
  return undefined;
}

/** Runs autocannon for `seconds` and measures every response's latency itself. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies = new Float64Array(MAX_SAMPLES);
  let count = 0;
  let non2xx = 0;
  let headerMismatches = 0;
  const started = performance.now();
  const instance = autocannon({
    url: spec.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...spec.headers },
    body: spec.body,
    connections: spec.connections,
    pipelining: 1,
    duration: spec.seconds,
    timeout: 10,
    setupClient: (client) => {
      if (spec.expectProvider === undefined) return;
      client.on('headers', (head) => {
        if (headerValue(head.headers, PROVIDER_HEADER) !== spec.expectProvider) headerMismatches += 1;
      });
    },
  });
  instance.on('response', (_client, statusCode, _bytes, ms) => {
    if (count < MAX_SAMPLES) latencies[count] = ms;
    count += 1;
    if (statusCode < 200 || statusCode >= 300) non2xx += 1;
  });
  const result = await instance;
  const seconds = (performance.now() - started) / 1000;
  const sorted = latencies.subarray(0, Math.min(count, MAX_SAMPLES)).sort();
  return {
    responses: count,
    seconds,
    rps: count / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    non2xx,
    errors: result.errors + result.timeouts,
    headerMismatches,
  };
}
