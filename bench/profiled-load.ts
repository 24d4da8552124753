import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BootedGateway } from './chat-modes';
import { runLoad } from './load';
import { renderSummary, summariseProfile, type CpuProfile } from './profile-summary';
import { log } from './run';

/** What a profiled gateway is loaded with: its route, body and concurrency, and who must serve each answer. */
export interface ProfiledLoad {
  /** Printed before the load starts (what is profiled). */
  what: string;
  path: string;
  body: string;
  connections: number;
  expectProvider?: string;
  warmupSeconds: number;
  seconds: number;
}

/**
 * Boots a gateway under `node --cpu-prof` (`boot` gets the flags), loads it, stops it, and prints where its main
 * thread's time went over the measured seconds (boot and warm-up left out). The profile stays in a temp dir.
 */
export async function profiledLoad(
  boot: (nodeArgs: string[]) => Promise<BootedGateway>,
  load: ProfiledLoad,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-profile-'));
  const { gateway, secret } = await boot(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const spec = {
    url: `${gateway.url}${load.path}`,
    headers: { authorization: `Bearer ${secret}` },
    body: load.body,
    connections: load.connections,
    expectProvider: load.expectProvider,
  };
  log(`profiling ${load.what} at c=${load.connections} for ${load.seconds} s (after ${load.warmupSeconds} s warm-up)`);
  await runLoad({ ...spec, seconds: load.warmupSeconds });
  const result = await runLoad({ ...spec, seconds: load.seconds });
  log(
    `  ${result.rps.toFixed(0)} req/s under the profiler, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms`,
  );
  await gateway.stop();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`the gateway wrote no .cpuprofile into ${dir}`);
  // the measured seconds and the shutdown after them
  const summary = summariseProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, {
    lastMs: (load.seconds + 1) * 1000,
  });
  process.stdout.write(`\n${renderSummary(summary)}\n\nprofile: ${join(dir, file)} (whole run, boot included)\n`);
}
