import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody } from './support/failover';
import { runShell, ServiceProcess, spawnService } from './support/process';

// the banner's "Make a key" commands, copied from a started service's output and run in a shell as printed
jest.setTimeout(180000);

const base = { PORT: '0', HOST: '127.0.0.1', SVC_DEMO_KEY: 'false' };

async function started(service: ServiceProcess): Promise<string> {
  const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 90000);
  // the banner's last line is the admin API's
  await service.waitFor(/^ {4}admin API.*$/m);
  return url;
}

/** The command a banner line offers: what follows "CLI (…): " or "admin API (…): ". */
function bannerCommand(output: string, label: 'CLI' | 'admin API'): string {
  const match = new RegExp(`^ {4}${label}(?: \\([^)]*\\))?: (.+)$`, 'm').exec(output);
  if (!match) throw new Error(`no ${label} line in the banner:\n${output}`);
  return match[1];
}

/** The secret in a command's output: the CLI's "Secret (shown once…): sk-svc-…" or the admin API's JSON. */
const secretIn = (text: string): string | undefined => /(sk-svc-[0-9A-Za-z]{32,})/.exec(text)?.[1];

async function chatWorks(url: string, secret: string): Promise<number> {
  const res = await fetch(`${url}${CHAT_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(chatBody('echo-1')),
  });
  return res.status;
}

describe("the banner's commands work as printed", () => {
  const running: ServiceProcess[] = [];
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-banner-'));
  });
  afterAll(() => {
    for (const service of running) service.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('embedded: the admin API curl makes a key the service serves; the CLI makes one once the service is stopped', async () => {
    // a newcomer's shell: no DATABASE_URL, no SVC_ADMIN_TOKEN
    const shell = { DATABASE_URL: undefined, SVC_ADMIN_TOKEN: undefined, SVC_DATA_DIR: undefined };
    const service = spawnService({
      ...base,
      DATABASE_URL: undefined,
      SVC_ADMIN_TOKEN: undefined,
      SVC_DATA_DIR: dataDir,
    });
    running.push(service);
    const url = await started(service);

    const curl = await runShell(bannerCommand(service.output(), 'admin API'), shell);
    expect(curl.code).toBe(0);
    const made = JSON.parse(curl.stdout) as { object?: string; secret?: string };
    expect(made.object).toBe('proxy_key');
    expect(await chatWorks(url, made.secret ?? '')).toBe(200);

    const cli = bannerCommand(service.output(), 'CLI');
    // while the service holds the embedded database, the CLI says so in one line
    const early = await runShell(cli, shell);
    expect(early.code).not.toBe(0);
    expect(early.stderr).toMatch(/^error: The embedded database in \S+ is in use by another process \(pid \d+\)/m);
    expect(early.stderr).not.toMatch(/^\s+at /m);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const result = await runShell(cli, shell);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Created key pk_\w+ \(my-app\)/);
    expect(secretIn(result.stdout)).toBeDefined();
  });

  it('PostgreSQL without SVC_ADMIN_TOKEN: the CLI runs beside the service, which serves the new key at once', async () => {
    const service = spawnService({ ...base, SVC_ADMIN_TOKEN: undefined });
    running.push(service);
    const url = await started(service);
    expect(service.output()).toMatch(/admin API: off \(set SVC_ADMIN_TOKEN and restart to turn it on\)/);

    // the shell has the service's DATABASE_URL (the run's PostgreSQL), as the banner says
    const result = await runShell(bannerCommand(service.output(), 'CLI'), { DATABASE_URL: process.env.DATABASE_URL });
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.code).toBe(0);
    const secret = secretIn(result.stdout);
    expect(secret).toBeDefined();
    expect(await chatWorks(url, secret ?? '')).toBe(200);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });

  it('PostgreSQL with SVC_ADMIN_TOKEN: the curl, run where the token is set, makes a key', async () => {
    const service = spawnService({ ...base, SVC_ADMIN_TOKEN: ADMIN_TOKEN });
    running.push(service);
    const url = await started(service);
    const curl = bannerCommand(service.output(), 'admin API');
    expect(curl).not.toContain(ADMIN_TOKEN); // the configured token is not printed
    const result = await runShell(curl, { SVC_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(result.code).toBe(0);
    const made = JSON.parse(result.stdout) as { secret?: string };
    expect(await chatWorks(url, made.secret ?? '')).toBe(200);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  });
});
