import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { tinyWav } from './support/audio';

const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The code blocks of one language in the README's "A five-minute tour" section, in order. */
function tourBlocks(language: string): string[] {
  const tour = /## A five-minute tour\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
  return [...tour.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);
}

/** Runs a command to its end without blocking this process, whose event loop serves the app under test. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 50000);
  return new Promise((resolve) =>
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    }),
  );
}

/**
 * The README's tour, run as a newcomer runs it against a started service: its shell block with the printed
 * key and token filled in, and its SDK snippet with the official `openai` SDK. A snippet that breaks fails here.
 */
describe("the README's five-minute tour", () => {
  let t: TestApp;
  let dir: string;
  let key: { id: string; secret: string };

  beforeAll(async () => {
    t = await startApp();
    key = await t.createKey('readme tour', [
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ]);
    // inside the checkout, so the SDK snippet's `import 'openai'` resolves as it does in a project that installed it
    dir = mkdtempSync(join(root, '.readme-snippets-'));
    writeFileSync(join(dir, 'consent.wav'), tinyWav(16000, 16000));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  it('runs the shell block: a key made, a consent through its whole life, chat served by echo, speech as WAV', async () => {
    const [block] = tourBlocks('bash');
    expect(block).toContain('BASE=http://localhost:3000');
    const script = block
      .replace(/^BASE=.*$/m, `BASE=${t.url}`)
      .replace(/^KEY=.*$/m, `KEY=${key.secret}`)
      .replace(/^ADMIN=.*$/m, `ADMIN=${ADMIN_TOKEN}`);
    const shell = await run('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir });
    expect({ status: shell.status, stderr: shell.stderr }).toEqual({ status: 0, stderr: '' });
    expect(shell.stdout).toMatch(/"object":"proxy_key"/);
    expect(shell.stdout).toMatch(/"language":"en-US","name":"Consent of Ada","object":"audio.voice_consent"/);
    expect(shell.stdout).toMatch(/"name":"New name"/);
    expect(shell.stdout).toMatch(/"deleted":true/);
    expect(shell.stdout).toMatch(/x-svc-provider-used: echo/i);
    expect(readFileSync(join(dir, 'back.wav')).equals(readFileSync(join(dir, 'consent.wav')))).toBe(true);
    expect(readFileSync(join(dir, 'hello.wav')).subarray(0, 4).toString('latin1')).toBe('RIFF');
  });

  it('runs the openai SDK snippet: a consent made and listed', async () => {
    const [snippet] = tourBlocks('js');
    expect(snippet).toContain("import OpenAI, { toFile } from 'openai';");
    const file = join(dir, 'snippet.mjs');
    writeFileSync(file, snippet.replace('http://localhost:3000/v1', `${t.url}/v1`));
    const node = await run(process.execPath, [file], { cwd: dir, env: { ...process.env, KEY: key.secret } });
    expect({ status: node.status, stderr: node.stderr }).toEqual({ status: 0, stderr: '' });
    expect(node.stdout.trim().split('\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^vc_/)]));
  });
});
