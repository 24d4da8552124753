#!/usr/bin/env node
'use strict';
// `npm start`'s prestart: builds only when the compiled output is older than what it is compiled from.
// Up to date when the stamp this script wrote after its own build holds the inputs' current hash; after a
// build by anything else (`nest build` deletes dist, stamp included), when dist is newer than every input.
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const { existsSync, readdirSync, readFileSync, statSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const MAIN = join(root, 'dist/src/main.js');
const STAMP = join(root, 'dist/.build-inputs');
/** What `nest build` compiles (tsconfig.build.json) and what changes how it compiles. */
const INPUT_DIRS = ['src', 'migrations', 'bench', 'test/fakes'];
const INPUT_FILES = [
  'ormconfig.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'nest-cli.json',
  'package.json',
  'package-lock.json',
];

/** The TypeScript files under a folder, at any depth. */
function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    // only what tsc compiles: bench/results.md and the like change without needing a build
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const inputs = [
  ...INPUT_DIRS.flatMap((dir) => filesUnder(join(root, dir))),
  ...INPUT_FILES.map((file) => join(root, file)).filter((file) => existsSync(file)),
].sort();

function inputsHash() {
  const hash = createHash('sha256');
  for (const file of inputs) hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

function upToDate(hash) {
  if (!existsSync(MAIN)) return false;
  // an installed image has dist and no sources: nothing to build from
  if (!existsSync(join(root, 'src'))) return true;
  if (existsSync(STAMP)) return readFileSync(STAMP, 'utf8') === hash;
  const built = statSync(MAIN).mtimeMs;
  // a deleted or renamed file changes its folder's time
  const folders = INPUT_DIRS.map((dir) => join(root, dir)).filter((dir) => existsSync(dir));
  return [...inputs, ...folders].every((path) => statSync(path).mtimeMs <= built);
}

const hash = inputsHash();
if (upToDate(hash)) {
  process.stdout.write('build: dist is up to date with its sources, not rebuilding\n');
} else {
  process.stdout.write('build: sources changed since the last build, running nest build\n');
  const result = spawnSync(process.execPath, [require.resolve('@nestjs/cli/bin/nest.js'), 'build'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  writeFileSync(STAMP, hash);
}
