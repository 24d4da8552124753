import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BOTH_DATABASES } from './support/both-databases';
import { CommandResult, runKeysCli } from './support/process';

// the compiled CLI as a user runs it: `npm run keys -- …` in the project root (npm test builds first)
jest.setTimeout(120000);

/** Node prints a stack trace as lines starting with "at "; the CLI must print none. */
const STACK_FRAME = /^\s+at /m;

function expectClean(result: CommandResult): void {
  expect(`${result.stdout}${result.stderr}`).not.toMatch(STACK_FRAME);
  expect(result.stderr).not.toMatch(/UnknownDependencies|ExceptionHandler/);
}

describe.each(BOTH_DATABASES)('the key CLI (npm run keys), on %s', (_label, choice) => {
  let dataDir: string | undefined;
  let env: Record<string, string | undefined>;

  beforeAll(() => {
    dataDir = choice === 'embedded' ? mkdtempSync(join(tmpdir(), 'svc-keys-cli-')) : undefined;
    // the server: the run's PostgreSQL (DATABASE_URL of the e2e setup); embedded: a fresh data directory
    env = dataDir ? { DATABASE_URL: undefined, SVC_DATA_DIR: dataDir } : { DATABASE_URL: process.env.DATABASE_URL };
  });
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates a key and prints its secret once, lists it by id and name, shows it, and deletes it', async () => {
    const name = `cli ${choice} ${Date.now()}`;
    const created = await runKeysCli(
      [
        'create',
        '--name',
        name,
        '--chain',
        '[{"provider":"echo","model":"echo-1"},{"provider":"espeak","model":"speech-02-hd"}]',
      ],
      env,
    );
    expectClean(created);
    expect(created.code).toBe(0);
    const [, id] = /Created key (pk_[0-9A-Za-z]+) \(([^)]*)\)/.exec(created.stdout) ?? [];
    expect(created.stdout).toContain(`Created key ${id} (${name}), chain echo/echo-1 > espeak/speech-02-hd.`);
    const [, secret] = /Secret \(shown once, keep it\): (sk-svc-[0-9A-Za-z]+)/.exec(created.stdout) ?? [];
    expect(secret).toMatch(/^sk-svc-[0-9A-Za-z]{32,}$/);

    const listed = await runKeysCli(['list'], env);
    expectClean(listed);
    expect(listed.code).toBe(0);
    const row = listed.stdout.split('\n').find((line) => line.startsWith(id));
    expect(row).toMatch(new RegExp(`^${id}\\s+${name}\\s+…${secret.slice(-4)}\\s+echo/echo-1 > espeak/speech-02-hd$`));
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+SECRET\s+CHAIN$/m);
    // the secret is printed once: never by list or show
    expect(listed.stdout).not.toContain(secret);

    const shown = await runKeysCli(['show', id], env);
    expectClean(shown);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`id:      ${id}`);
    expect(shown.stdout).toContain(`name:    ${name}`);
    expect(shown.stdout).toContain('chain:   echo/echo-1 > espeak/speech-02-hd');
    expect(shown.stdout).not.toContain(secret);

    const json = await runKeysCli(['show', id, '--json'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout.slice(json.stdout.indexOf('{')))).toMatchObject({ id, name, object: 'proxy_key' });

    const deleted = await runKeysCli(['delete', id], env);
    expectClean(deleted);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain(`Deleted key ${id}`);

    const after = await runKeysCli(['list'], env);
    expect(after.code).toBe(0);
    expect(after.stdout).not.toContain(id);
  });

  it.each([
    [
      'an unknown id',
      ['show', 'pk_doesnotexist'],
      /^error: resource_not_found: No proxy key found with id 'pk_doesnotexist'/m,
    ],
    ['an unknown id to delete', ['delete', 'pk_doesnotexist'], /^error: resource_not_found: No proxy key found/m],
    [
      'a chain that is not JSON',
      ['create', '--name', 'x', '--chain', '[{provider:echo}'],
      /^error: invalid_json: --chain is not valid JSON/m,
    ],
    [
      'a chain naming no configured provider',
      ['create', '--name', 'x', '--chain', '[{"provider":"nope","model":"m"}]'],
      /^error: unknown_provider: Unknown provider 'nope'/m,
    ],
    ['an unknown command', ['frobnicate'], /^error: Unknown command 'frobnicate'\.\nUsage: npm run keys/m],
  ])('answers %s with one clear line and a non-zero exit, no stack trace', async (_what, args, message) => {
    const result = await runKeysCli(args, env);
    expectClean(result);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });
});

describe('the key CLI (npm run keys) with a DATABASE_URL it cannot use', () => {
  it.each([
    [
      'a server that does not answer: it waits a few seconds, then gives up',
      'postgres://postgres@127.0.0.1:1/svc',
      /^error: waiting for the database at 127\.0\.0\.1:1\/svc: connect ECONNREFUSED[^\n]*; gave up after \d+ s$/m,
    ],
    [
      'a database that does not exist: at once',
      'postgres://postgres@127.0.0.1:5432/svc_no_such_database',
      /^error: Cannot use the database at 127\.0\.0\.1:5432\/svc_no_such_database: database "svc_no_such_database" does not exist$/m,
    ],
    ['a DATABASE_URL that is no PostgreSQL URL', 'mysql://x', /^error: Invalid environment:\n {2}DATABASE_URL: /m],
  ])('%s, in one line and a non-zero exit', async (_what, url, message) => {
    const result = await runKeysCli(['list'], { DATABASE_URL: url });
    expectClean(result);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });
});
