import { join } from 'node:path';

/**
 * The worker entry beside this file: the compiled one in a build, the TypeScript one when the sources run
 * (jest), so a test never runs a stale build of the worker.
 */
export function workerScript(): string {
  return join(__dirname, __filename.endsWith('.ts') ? 'worker-main.ts' : 'worker-main.js');
}

/** Node's flags for a worker: the parent's, and for a TypeScript entry tsx's loader (transpiles only: the type check is the build's). */
export function workerExecArgv(script: string): string[] {
  return script.endsWith('.ts') ? [...process.execArgv, '--require', 'tsx/cjs'] : process.execArgv;
}
