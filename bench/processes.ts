import { ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';

/** A forked helper (upstream, bare proxy) and the first message it sent. */
export interface Forked<T> {
  child: ChildProcess;
  ready: T;
  stop(): Promise<void>;
}

const STOP_GRACE_MS = 5000;

/** Resolves when the child has exited; SIGKILL after the grace time. */
async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const late = await Promise.race([exited.then(() => false), sleep(STOP_GRACE_MS).then(() => true)]);
  if (late) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** Forks `script` with an IPC channel and waits (bounded) for its first message matching `ready`. */
export function forkHelper<T>(
  script: string,
  args: string[],
  isReady: (message: unknown) => message is T,
  timeoutMs = 15000,
): Promise<Forked<T>> {
  const child = fork(script, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${script} sent nothing within ${timeoutMs} ms`)), timeoutMs);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    };
    child.once('exit', (code) => fail(new Error(`${script} exited with ${code} before it was ready`)));
    child.on('message', function onMessage(message) {
      if (!isReady(message)) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      child.off('message', onMessage);
      const stop = (): Promise<void> => {
        // closing the IPC channel is the helper's signal to stop; the signal is the fallback
        if (child.connected) child.disconnect();
        return stopChild(child, 'SIGTERM');
      };
      resolve({ child, ready: message, stop });
    });
  });
}

/** Sends `request` to a forked helper and waits (bounded) for the reply `isReply` accepts. */
export function ask<T>(
  child: ChildProcess,
  request: string,
  isReply: (message: unknown) => message is T,
  timeoutMs = 5000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      reject(new Error(`no reply to '${request}' within ${timeoutMs} ms`));
    }, timeoutMs);
    function onMessage(message: unknown): void {
      if (!isReply(message)) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message);
    }
    child.on('message', onMessage);
    child.send(request);
  });
}

export interface GatewayProcess {
  url: string;
  pid: number;
  logFile: string;
  /** SIGTERM (the gateway closes HTTP, jobs and database), SIGKILL if it takes too long. */
  stop(): Promise<void>;
}

export interface GatewayLaunch {
  script: string;
  env: Record<string, string>;
  /** Where stdout and stderr go: the JSON logs are written for real, not thrown away. */
  logFile: string;
  nodeArgs?: string[];
  bootTimeoutMs?: number;
}

/** The admin token of every benchmark's gateways. */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

/**
 * The environment of a benchmark's gateway: its own database and gateway YAML, a free port on loopback,
 * info logs, the bench's admin token, no demo key; `extra` adds or overrides.
 */
export function gatewayEnv(
  databaseUrl: string,
  config: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SVC_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
    SVC_CONFIG: config,
    SVC_DEMO_KEY: 'false',
    ...extra,
  };
}

const BANNER = /Gateway listening on (http:\/\/\S+)/;
const BOOT_POLL_MS = 100;

/**
 * The node flags `npm start` runs the service with (package.json's `start` script), so a benchmark
 * measures the process as it is deployed; the Dockerfile's CMD carries the same flags.
 */
export function serviceNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const match = /^(?:exec\s+)?node((?:\s+--\S+)*)\s+dist\/src\/main\.js$/.exec(pkg.scripts.start);
  if (!match)
    throw new Error(
      `package.json's start script is not "[exec] node [--flags] dist/src/main.js": ${pkg.scripts.start}`,
    );
  return match[1].split(/\s+/).filter(Boolean);
}

/** Starts `node dist/src/main.js` with its output in a file, and waits (bounded) for its banner. */
export async function startGateway(launch: GatewayLaunch): Promise<GatewayProcess> {
  const fd = openSync(launch.logFile, 'w');
  const child = spawn(process.execPath, [...serviceNodeFlags(), ...(launch.nodeArgs ?? []), launch.script], {
    env: { ...process.env, ...launch.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const stop = (): Promise<void> => stopChild(child, 'SIGTERM');
  const deadline = Date.now() + (launch.bootTimeoutMs ?? 60000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`gateway exited with ${child.exitCode}:\n${readFileSync(launch.logFile, 'utf8').slice(-4000)}`);
    const match = BANNER.exec(readFileSync(launch.logFile, 'utf8'));
    if (match && child.pid !== undefined) return { url: match[1], pid: child.pid, logFile: launch.logFile, stop };
    await sleep(BOOT_POLL_MS);
  }
  await stop();
  throw new Error(
    `gateway printed no banner within ${launch.bootTimeoutMs ?? 60000} ms:\n${readFileSync(launch.logFile, 'utf8').slice(-4000)}`,
  );
}

/** Creates a key with this chain through a bench gateway's admin API; its secret. */
export async function createBenchKey(
  url: string,
  name: string,
  chain: Array<{ provider: string; model: string }>,
): Promise<string> {
  const created = await fetch(`${url}/v1/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, chain }),
  });
  const body = (await created.json()) as { secret?: string };
  if (created.status !== 201 || !body.secret)
    throw new Error(`key creation failed: ${created.status} ${JSON.stringify(body)}`);
  return body.secret;
}

/** The processes `pid` started and that still run (a gateway's audio workers). */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return []; // ps exits 1 when there is no child
  }
}

/** Resident set size of a process in MB (VmRSS), or null once it is gone. */
export function rssMb(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Samples a process's RSS until stopped; `peak()` is the highest seen. */
export function watchRss(pid: number, intervalMs = 100): { peak(): number; stop(): number } {
  let peak = rssMb(pid) ?? 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(pid) ?? 0);
  }, intervalMs);
  return {
    peak: () => peak,
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, rssMb(pid) ?? 0);
    },
  };
}
