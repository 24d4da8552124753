import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The repository root (where package.json is), the same from src/ under jest and from dist/. */
export function projectRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${from}`);
    dir = parent;
  }
  return dir;
}
