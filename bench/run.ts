import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/** What every benchmark shares: its temp dir and databases, the machine's description, and the env knobs. */

// the services a benchmark starts use a PostgreSQL server, where the gateway wants a key for webhook secrets
process.env.SVC_SECRET_KEY ??= 'benchmark-webhook-secret-key-0123456789';

export const log = (line: string): void => void process.stderr.write(`${line}\n`);

export function secondsFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > 600)
    throw new Error(`${name} must be a number of seconds in (0, 600]`);
  return value;
}

export function machine(): { cores: number; cpu: string } {
  let cores = cpus().length;
  try {
    cores = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // no nproc binary: the OS count is the next best thing
  }
  return { cores, cpu: cpus()[0]?.model ?? 'unknown CPU' };
}

/** Everything started by this run, so that a failure or Ctrl-C still cleans up. */
export class Run {
  readonly tmp = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  readonly adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  private readonly stamp = `${Date.now()}`;
  private readonly databases: string[] = [];
  private readonly stoppers = new Set<() => Promise<void>>();
  private monitor: Client | null = null;

  track<T extends { stop(): Promise<void> }>(thing: T): T {
    const stop = thing.stop.bind(thing);
    this.stoppers.add(stop);
    thing.stop = async () => {
      this.stoppers.delete(stop);
      await stop();
    };
    return thing;
  }

  async createDatabase(label: string): Promise<{ name: string; url: string }> {
    const name = `bench_${this.stamp}_${label.replace(/\W/g, '_')}`;
    await this.admin(`CREATE DATABASE ${name}`);
    this.databases.push(name);
    const url = new URL(this.adminUrl);
    url.pathname = `/${name}`;
    return { name, url: url.toString() };
  }

  /**
   * Flushes what earlier targets wrote (CHECKPOINT), so their dirty pages are not written out, and commits
   * made slow, while the next target is measured. Needs a superuser (the local server's postgres).
   */
  async checkpoint(): Promise<void> {
    await this.admin('CHECKPOINT');
  }

  /** The PostgreSQL server processes serving `database` (their CPU is the gateway's database cost). */
  async backendPids(database: string): Promise<number[]> {
    if (!this.monitor) {
      this.monitor = new Client({ connectionString: this.adminUrl });
      await this.monitor.connect();
    }
    const { rows } = await this.monitor.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
      database,
    ]);
    return rows.map((r) => r.pid);
  }

  async cleanUp(): Promise<void> {
    // last started, first stopped: gateways before the upstream they call, before the files they run from
    for (const stop of [...this.stoppers].reverse()) await stop().catch(() => undefined);
    await this.monitor?.end().catch(() => undefined);
    this.monitor = null;
    for (const name of this.databases.splice(0)) {
      await this.admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((err: Error) =>
        process.stderr.write(`could not drop ${name}: ${err.message}\n`),
      );
    }
    rmSync(this.tmp, { recursive: true, force: true });
  }

  private async admin(sql: string): Promise<void> {
    const client = new Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }
}

/** Runs `body` with a Run that is cleaned up on success, failure and Ctrl-C; exits 0 when the run completed (a missed target is a result). */
export function runBenchmark(name: string, body: (run: Run) => Promise<void>): void {
  const run = new Run();
  const interrupt = (): void => {
    log('interrupted: cleaning up');
    void run.cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  Promise.resolve()
    .then(() => body(run))
    .finally(() => run.cleanUp())
    .then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`${name} failed: ${err.stack ?? err.message}\n`);
        process.exit(2);
      },
    );
}
