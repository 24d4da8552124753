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
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; version: string }>;
    };
    const notice = readFileSync(join(root, 'THIRD-PARTY-NOTICES.md'), 'utf8');
    const production = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev);
    expect(production.length).toBeGreaterThan(100);
    for (const [path, entry] of production) {
      const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      expect(notice).toContain(`| ${name} | ${entry.version} | `);
    }
  });

  it('no copyleft package placed in the workers is loaded by the gateway process, after speech in every format', () => {
    const run = spawnSync(process.execPath, [join(root, 'test/support/loaded-modules.js')], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120000,
    });
    if (run.status !== 0) throw new Error(`the gateway did not run: ${run.stderr}`);
    const { statuses, loaded } = JSON.parse(run.stdout) as {
      statuses: Array<[string, number, number]>;
      loaded: string[];
    };
    // the speech really was made (so the encoders and the engine were needed somewhere)
    for (const [, status, bytes] of statuses) {
      expect(status).toBe(200);
      expect(bytes).toBeGreaterThan(1000);
    }
    expect(loaded.some((file) => file.includes('/dist/src/app.module.js'))).toBe(true);
    const workerOnly = evaluate(
      `console.log(JSON.stringify(Object.entries(licences.COPYLEFT_PLACEMENT).filter(([, p]) => p.where === 'worker').map(([name]) => name)))`,
    ) as string[];
    expect(workerOnly).toEqual(expect.arrayContaining(['espeak-ng', '@breezystack/lamejs']));
    const inProcess = loaded.filter((file) => workerOnly.some((name) => file.includes(`/node_modules/${name}/`)));
    expect(inProcess).toEqual([]);
  }, 150000);

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
