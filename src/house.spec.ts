import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** The top-level folders of `src/` and which others each imports (spec files left out). */
function folderImports(root: string): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  const topOf = (file: string): string | null => {
    const parts = relative(root, file).split(sep);
    return parts.length > 1 ? parts[0] : null; // a file directly in src/ (app.module.ts, main.ts) is the composition root
  };
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
        const from = topOf(path);
        if (!from) continue;
        for (const match of readFileSync(path, 'utf8').matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
          const target = resolve(dirname(path), match[1]);
          if (!target.startsWith(root + sep)) continue;
          const to = topOf(target);
          if (!to || to === from) continue;
          if (!edges.has(from)) edges.set(from, new Set());
          edges.get(from)?.add(to);
        }
      }
    }
  };
  walk(root);
  return edges;
}

/** Groups of folders that import each other in a loop (strongly connected components of two or more). */
function importLoops(edges: Map<string, Set<string>>): string[][] {
  const nodes = [...new Set([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])])];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) loops.push(group.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return loops;
}

/** The top-level folders from the bottom up, as the README's layout lists them: each imports only folders before it. */
const LAYERS = [
  'common',
  'tracing',
  'config',
  'audio',
  'metrics',
  'database',
  'keys',
  'quotas',
  'auth',
  'providers',
  'usage',
  'models',
  'failover',
  'consents',
  'voices',
  'chat',
  'speech',
  'minimax-compat',
  'webhooks',
  'health',
  'bin',
];

describe('the house: folders of src/ import one another one way only', () => {
  it('finds a loop when there is one (the check can fail)', () => {
    const edges = new Map([
      ['speech', new Set(['failover'])],
      ['failover', new Set(['providers'])],
      ['providers', new Set(['speech'])],
      ['common', new Set<string>()],
    ]);
    expect(importLoops(edges)).toEqual([['failover', 'providers', 'speech']]);
  });

  it('has no import loop between top-level folders of src/', () => {
    const edges = folderImports(resolve(__dirname));
    expect(edges.size).toBeGreaterThan(10);
    const loops = importLoops(edges).map((group) => group.join(' <-> '));
    expect(loops).toEqual([]);
  });

  it('has every folder in its layer and every import pointing down the layers', () => {
    const edges = folderImports(resolve(__dirname));
    const unlisted = readdirSync(resolve(__dirname), { withFileTypes: true })
      .filter((e) => e.isDirectory() && !LAYERS.includes(e.name))
      .map((e) => e.name);
    expect(unlisted).toEqual([]);
    const upward = [...edges].flatMap(([from, tos]) =>
      [...tos].filter((to) => LAYERS.indexOf(to) > LAYERS.indexOf(from)).map((to) => `${from} -> ${to}`),
    );
    expect(upward).toEqual([]);
  });
});
