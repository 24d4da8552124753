import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');

/** Runs an ES module snippet against scripts/licenses.mjs and returns what it printed as JSON. */
function evaluate(body: string): unknown {
  const source = `import * as licences from './scripts/licenses.mjs';\n${body}`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', source], { cwd: root, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`licence script failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as unknown;
}

describe('licence and third-party notice', () => {
  it('declares a permissive licence with a LICENSE file', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string };
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it('THIRD-PARTY-NOTICES.md is current and every copyleft production dependency is placed (npm run licenses -- --check)', () => {
    const run = spawnSync(process.execPath, ['scripts/licenses.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const notice = readFileSync(join(root, 'THIRD-PARTY-NOTICES.md'), 'utf8');
    expect(notice).toMatch(/\| espeak-ng [\d.]+ \| GPL-3\.0[^|]* \| audio worker processes only/);
  });

  it('lists every production dependency of the lockfile with its licence', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; version: string }> };
    const notice = readFileSync(join(root, 'THIRD-PARTY-NOTICES.md'), 'utf8');
    const production = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev);
    expect(production.length).toBeGreaterThan(100);
    for (const [path, entry] of production) {
      const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      expect(notice).toContain(`| ${name} | ${entry.version} | `);
    }
  });

  it('reports a copyleft or unknown licence that no decision places, and passes permissive ones', () => {
    const unplaced = evaluate(`
      const deps = [
        { name: 'left-pad', version: '1.0.0', licence: 'MIT' },
        { name: 'some-gpl-lib', version: '2.0.0', licence: 'GPL-2.0-only' },
        { name: 'some-agpl-lib', version: '1.0.0', licence: 'AGPL-3.0' },
        { name: 'mystery', version: '0.1.0', licence: 'UNKNOWN' },
        { name: 'espeak-ng', version: '1.0.2', licence: 'GPL-3.0-or-later' },
      ];
      console.log(JSON.stringify(licences.unplacedCopyleft(deps).map((d) => d.name)));
    `);
    expect(unplaced).toEqual(['some-gpl-lib', 'some-agpl-lib', 'mystery']);
  });
});
