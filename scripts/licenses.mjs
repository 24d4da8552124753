#!/usr/bin/env node
// Writes THIRD-PARTY-NOTICES.md from package-lock.json: every production dependency with its licence,
// and where each copyleft one is allowed to run. `--check` exits 1 when the file is stale or a copyleft
// licence appears that the policy below does not place.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const NOTICE_FILE = join(root, 'THIRD-PARTY-NOTICES.md');

/** Licences that put conditions on a program the code is combined with. */
export const COPYLEFT = /\b(A?GPL|LGPL|MPL|EPL|EUPL|CDDL|OSL|SSPL|CC-BY-SA)\b/i;

/**
 * Where each copyleft production dependency runs. 'worker' means only in the audio worker processes
 * (a separate program the gateway talks to over IPC), never loaded into the gateway's own process.
 */
export const COPYLEFT_PLACEMENT = {
  'espeak-ng': { where: 'worker', why: 'the offline speech engine (espeak-ng compiled to WebAssembly)' },
  '@breezystack/lamejs': { where: 'worker', why: 'the MP3 encoder' },
};

function licenceOf(path, entry) {
  if (typeof entry.license === 'string') return entry.license;
  const manifest = join(root, path, 'package.json');
  if (existsSync(manifest)) {
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
    if (typeof pkg.license === 'string') return pkg.license;
    if (Array.isArray(pkg.licenses)) return pkg.licenses.map((l) => l.type ?? l).join(' OR ');
  }
  return 'UNKNOWN';
}

/** Production dependencies of the lockfile: name, version, licence (one row per name and version). */
export function productionDependencies() {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const rows = new Map();
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (path === '' || entry.dev || entry.link) continue;
    const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    rows.set(`${name}@${entry.version}`, { name, version: entry.version, licence: licenceOf(path, entry) });
  }
  return [...rows.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

/** Copyleft production dependencies the policy does not place: each is a licence decision nobody made. */
export function unplacedCopyleft(deps = productionDependencies()) {
  return deps.filter((d) => (COPYLEFT.test(d.licence) || d.licence === 'UNKNOWN') && !COPYLEFT_PLACEMENT[d.name]);
}

export function renderNotice(deps = productionDependencies()) {
  const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const lines = [
    '# Third-party notices',
    '',
    `${own.name} is licensed under ${own.license} (see LICENSE). It is distributed with the production`,
    'dependencies below, each under its own licence. Generated from package-lock.json by `npm run licenses`;',
    'a test fails when this file is stale or when a copyleft licence appears that is not placed here.',
    '',
    '## Copyleft components and where they run',
    '',
    '| package | licence | runs in | what it is |',
    '|---|---|---|---|',
  ];
  for (const d of deps.filter((x) => COPYLEFT_PLACEMENT[x.name])) {
    const place = COPYLEFT_PLACEMENT[d.name];
    const where = place.where === 'worker' ? 'audio worker processes only (a separate program, over IPC)' : place.where;
    lines.push(`| ${d.name} ${d.version} | ${d.licence} | ${where} | ${place.why} |`);
  }
  lines.push(
    '',
    `## All production dependencies (${deps.length})`,
    '',
    '| package | version | licence |',
    '|---|---|---|',
  );
  for (const d of deps) lines.push(`| ${d.name} | ${d.version} | ${d.licence} |`);
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const deps = productionDependencies();
  const unplaced = unplacedCopyleft(deps);
  for (const d of unplaced)
    console.error(`copyleft or unknown licence not placed: ${d.name}@${d.version} (${d.licence})`);
  const text = renderNotice(deps);
  if (process.argv.includes('--check')) {
    const current = existsSync(NOTICE_FILE) ? readFileSync(NOTICE_FILE, 'utf8') : '';
    if (current !== text) console.error('THIRD-PARTY-NOTICES.md is stale: run npm run licenses');
    process.exit(unplaced.length > 0 || current !== text ? 1 : 0);
  }
  writeFileSync(NOTICE_FILE, text);
  console.log(`wrote THIRD-PARTY-NOTICES.md: ${deps.length} production dependencies`);
  process.exit(unplaced.length > 0 ? 1 : 0);
}
