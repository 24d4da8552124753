import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(__dirname, '..');
const IMPORT =
  /(?:import|export)\s[^'";]*?from\s+'([^']+)'|import\s+'([^']+)'|import\('([^']+)'\)|require(?:\.resolve)?\('([^']+)'\)|loadEsm<[^>]*>\('([^']+)'\)/g;

function specifiers(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5]);
}

function resolveLocal(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) if (existsSync(candidate)) return candidate;
  throw new Error(`${relative(SRC, from)} imports ${specifier}, which does not resolve`);
}

/** Every source file the gateway process loads from `entry`, and every package it names. */
function reachable(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of specifiers(file)) {
      const local = resolveLocal(file, specifier);
      if (local) pending.push(local);
      else packages.add(specifier);
    }
  }
  return { files, packages };
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('the GPL engine stays out of the gateway process', () => {
  const { files, packages } = reachable(join(SRC, 'main.ts'));

  it('nothing the gateway imports reaches the engine or names the espeak-ng package (workers are forked by path)', () => {
    expect(files.size).toBeGreaterThan(100);
    expect(files).toContain(join(SRC, 'providers/espeak.adapter.ts'));
    const engine = [...files]
      .map((f) => relative(SRC, f))
      .filter((f) => f.startsWith('audio/engines/') && f !== 'audio/engines/espeak/espeak-voice.ts');
    expect(engine).toEqual([]);
    expect([...packages].filter((p) => p.startsWith('espeak-ng'))).toEqual([]);
  });

  it('the worker entry does load it (so the check above is looking at the right graph)', () => {
    const worker = reachable(join(SRC, 'audio/pool/worker-main.ts'));
    expect(worker.packages).toContain('espeak-ng');
  });
});

describe('src/audio is a library: it imports no feature', () => {
  it.each(sources(join(SRC, 'audio')).map((f) => [relative(SRC, f)]))('%s', (file) => {
    const outside = specifiers(join(SRC, file))
      .map((specifier) => resolveLocal(join(SRC, file), specifier))
      .filter((path): path is string => path !== null)
      .map((path) => relative(SRC, path))
      .filter((path) => !/^(audio|common|config)\//.test(path));
    expect(outside).toEqual([]);
  });
});
