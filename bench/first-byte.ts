import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import { percentile } from './load';

/**
 * Time to the first byte of a streamed answer at concurrency 1: one keep-alive connection, one
 * request after another for `seconds`; each time runs from sending the request to the first body
 * chunk (the first SSE event; the headers alone do not count), then the rest of the body is read.
 */

export interface FirstByteResult {
  responses: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  faults: number;
}

export async function measureFirstByte(
  url: string,
  headers: Record<string, string>,
  body: string,
  seconds: number,
): Promise<FirstByteResult> {
  const target = new URL(url);
  const client = new Client(target.origin);
  const times: number[] = [];
  let faults = 0;
  const until = performance.now() + seconds * 1000;
  try {
    while (performance.now() < until) {
      const started = performance.now();
      const res = await client.request({
        method: 'POST',
        path: target.pathname,
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      let first = true;
      for await (const _chunk of res.body) {
        if (!first) continue;
        first = false;
        times.push(performance.now() - started);
      }
      if (res.statusCode !== 200) faults += 1;
    }
  } finally {
    await client.close();
  }
  const sorted = Float64Array.from(times).sort();
  return { responses: times.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), faults };
}
