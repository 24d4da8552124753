import { ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody } from './support/failover';
import { isolatedDatabase } from './support/receiver';

// runs the real `npm start` against the BUILT service: `npm test` builds first, so its prestart finds dist up to date
jest.setTimeout(180000);

const GRACE_MS = 10000;
/** The in-flight request is held this long by the upstream: still running when the signal arrives. */
const SLOW_MS = 2000;

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something listens on the port. */
async function portTaken(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(true));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

/** The processes of a process group (npm, and the service it runs). */
function groupMembers(pgid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '-g', String(pgid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0);
  } catch {
    return []; // ps exits 1 when the group is empty
  }
}

interface NpmStart {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/** `npm start` (or `npm run <script>`) as a process manager runs it: its own process group, its output read. */
function npmStart(env: Record<string, string | undefined>, script = 'start'): NpmStart {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', ...env };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete childEnv[name];
  const child = spawn('npm', script === 'start' ? ['start'] : ['run', script], {
    cwd: projectRoot(),
    env: childEnv,
    detached: true,
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return { child, output: () => text, exited };
}

async function waitForOutput(start: NpmStart, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(start.output());
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; output so far:\n${start.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('npm start under a process manager', () => {
  let upstream: FakeOpenAi;
  let database: { url: string; drop(): Promise<void> };
  let dir: string;
  const groups: number[] = [];

  beforeAll(async () => {
    upstream = await startFakeOpenAi({ name: 'npm-start-upstream' });
    upstream.setMode('slowFirstByte', { model: 'm-slow', delayMs: SLOW_MS });
    database = await isolatedDatabase('npm_start');
    dir = mkdtempSync(join(tmpdir(), 'svc-npm-start-'));
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `providers:\n  - { name: ${upstream.name}, kind: openai, base_url: "${upstream.url}", api_key: x }\n`,
    );
  });
  afterAll(async () => {
    // whatever a failed test left in its own process groups
    for (const pgid of groups) if (groupMembers(pgid).length > 0) process.kill(-pgid, 'SIGKILL');
    await upstream?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['SIGTERM sent to the npm process (a process manager)', 'npm' as const, 'SIGTERM' as const],
    ['SIGINT sent to its whole process group (Ctrl-C in a terminal)', 'group' as const, 'SIGINT' as const],
  ])(
    '%s: the in-flight request completes, npm exits 0 within the grace time, the port is free and no process is left',
    async (_label, target, signal) => {
      const port = await freePort();
      const start = npmStart({
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        SVC_ADMIN_TOKEN: ADMIN_TOKEN,
        SVC_CONFIG: join(dir, 'gateway.yaml'),
        SVC_SHUTDOWN_GRACE_MS: String(GRACE_MS),
      });
      const pgid = start.child.pid ?? 0;
      groups.push(pgid);
      await waitForOutput(start, /Gateway listening on http:\/\/\S+/, 90000);
      // the prestart found the compiled output up to date: no rebuild on every start
      expect(start.output()).toContain('dist is up to date with its sources, not rebuilding');
      const url = `http://127.0.0.1:${port}`;
      const created = await fetch(`${url}/v1/admin/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `npm start ${signal}`, chain: [{ provider: upstream.name, model: 'm-slow' }] }),
      });
      const { secret } = (await created.json()) as { secret: string };
      const sent = upstream.count(CHAT_PATH);
      const inFlight = fetch(`${url}${CHAT_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody('m-slow')),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { choices?: unknown[] } }));
      await upstream.waitUntil(() => upstream.count(CHAT_PATH) === sent + 1, 10000);

      const signalledAt = Date.now();
      process.kill(target === 'npm' ? pgid : -pgid, signal);
      const answer = await inFlight;
      expect(answer.status).toBe(200);
      expect(answer.body.choices).toHaveLength(1);
      const exit = await start.exited;
      expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
      expect(exit.at - signalledAt).toBeLessThan(GRACE_MS);
      expect(start.output()).toMatch(new RegExp(`${signal} received: draining`));
      expect(await portTaken(port)).toBe(false);
      expect(groupMembers(pgid)).toEqual([]);
    },
  );

  it('npm start on a fresh clone (embedded database): prints a demo key that chats, and stops on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-npm-start-embedded-'));
    try {
      const start = npmStart({
        DATABASE_URL: undefined,
        SVC_ADMIN_TOKEN: undefined,
        SVC_DATA_DIR: dataDir,
        PORT: '0',
        HOST: '127.0.0.1',
      });
      const pgid = start.child.pid ?? 0;
      groups.push(pgid);
      const [, url] = await waitForOutput(start, /Gateway listening on (http:\/\/\S+)/, 90000);
      const [, secret] = await waitForOutput(start, /Demo key \(shown once, keep it\): (sk-svc-[0-9A-Za-z]+)/, 10000);
      const answer = await fetch(`${url}${CHAT_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody('echo-1')),
      });
      expect(answer.status).toBe(200);
      process.kill(pgid, 'SIGTERM');
      expect(await start.exited).toMatchObject({ code: 0, signal: null });
      expect(groupMembers(pgid)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('npm run start:prod (PostgreSQL, no build step): ready, serves a key, exits 0 on SIGTERM with no process left', async () => {
    const port = await freePort();
    const start = npmStart(
      {
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        SVC_ADMIN_TOKEN: ADMIN_TOKEN,
        SVC_CONFIG: join(dir, 'gateway.yaml'),
      },
      'start:prod',
    );
    const pgid = start.child.pid ?? 0;
    groups.push(pgid);
    await waitForOutput(start, /Gateway listening on http:\/\/\S+/, 90000);
    // production starts what is built: no prestart build check
    expect(start.output()).not.toContain('dist is up to date');
    const url = `http://127.0.0.1:${port}`;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const created = await fetch(`${url}/v1/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'start:prod', chain: [{ provider: upstream.name, model: 'm-fast' }] }),
    });
    expect(created.status).toBe(201);
    const { secret } = (await created.json()) as { secret: string };
    const answer = await fetch(`${url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody('m-fast')),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-svc-provider-used')).toBe(upstream.name);
    process.kill(pgid, 'SIGTERM');
    expect(await start.exited).toMatchObject({ code: 0, signal: null });
    expect(await portTaken(port)).toBe(false);
    expect(groupMembers(pgid)).toEqual([]);
  });
});
