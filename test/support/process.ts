import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/common/paths';

export interface ServiceProcess {
  child: ChildProcessWithoutNullStreams;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `pattern` in the output. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Runs the built service (`node dist/src/main.js`, what `npm start` runs) with the given environment. */
export function spawnService(env: Record<string, string | undefined>): ServiceProcess {
  const root = projectRoot();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', ...env };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete childEnv[name];
  const child = spawn(process.execPath, [join(root, 'dist/src/main.js')], { cwd: root, env: childEnv });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  // 'close', not 'exit': the child's stdout and stderr are read to their end first (its last log block included)
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    exited,
    waitFor(pattern, timeoutMs = 30000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(text);
          if (!match) return;
          cleanup();
          resolve(match);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`));
        }, timeoutMs);
        const cleanup = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Waits for the process to end and fails with the tail of its output unless it exited with 0. */
export async function expectCleanExit(service: ServiceProcess): Promise<void> {
  const code = await service.exited;
  if (code !== 0)
    throw new Error(`the service exited with ${code}; its last output:\n${service.output().slice(-4000)}`);
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command line in the project root as a user's shell does (`bash -c`), with the given environment. */
export function runShell(command: string, env: Record<string, string | undefined>): Promise<CommandResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete childEnv[name];
  const child = spawn('bash', ['-c', command], { cwd: projectRoot(), env: childEnv });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** `npm run keys -- <args>`, each argument quoted for the shell as a user would type it. */
export function runKeysCli(args: string[], env: Record<string, string | undefined>): Promise<CommandResult> {
  const quoted = args.map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  return runShell(`npm run keys -- ${quoted}`, env);
}

/** A JSON log line of the service (pino's), as tests read it. */
export type LogLine = Record<string, unknown> & { msg?: string; req?: { id?: string } };

/** Every JSON log line the service printed so far. */
export const logLines = (service: ServiceProcess): LogLine[] =>
  service
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

/** Waits (up to 10 s) until a JSON log line matches; fails naming `what`, with the output's tail. */
export async function logLineWhere(
  service: ServiceProcess,
  what: string,
  match: (line: LogLine) => boolean,
): Promise<LogLine> {
  const deadline = Date.now() + 10000;
  for (;;) {
    const found = logLines(service).find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no log line ${what}; output:\n${service.output().slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
