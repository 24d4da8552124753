import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ENTRY = 'worker-main.js';

/**
 * The compiled worker entry. Built code forks its sibling; the TypeScript sources (jest, ts-node) fork the
 * same file from the build output (`nest build` runs before the tests), since a forked .ts would need a loader.
 */
export function workerScript(): string {
  if (__filename.endsWith('.js')) return join(__dirname, ENTRY);
  const root = resolve(__dirname, '../../..');
  const built = join(root, 'dist', relative(root, __dirname), ENTRY);
  if (!existsSync(built))
    throw new Error(`the audio worker is not built (${relative(root, built)} is missing): run \`npm run build\``);
  return built;
}
