import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { projectRoot } from '../../src/common/paths';

/**
 * Headless Chromium from `npm ci` alone: @sparticuz/chromium ships the browser (headless shell) inside
 * the npm package, brotli-compressed; playwright-core drives it. Nothing is downloaded and nothing comes
 * from the machine's package manager.
 */

/** The package's CommonJS build (its types are declared as ES modules, so TypeScript cannot import them here). */
const Chromium = createRequire(__filename)('@sparticuz/chromium') as { executablePath(input?: string): Promise<string> };
const PACKAGE = join(projectRoot(), 'node_modules', '@sparticuz', 'chromium', 'package.json');
const VERSION = (JSON.parse(readFileSync(PACKAGE, 'utf8')) as { version: string }).version;
/** Where the browser is unpacked once per checkout and version (node_modules is the project's own cache). */
const CACHE = join(projectRoot(), 'node_modules', '.cache', 'sparticuz-chromium', VERSION);

/**
 * The unpacked browser's path. The package unpacks into os.tmpdir(); here that is pointed at a staging
 * folder of this process, renamed into place when complete, so parallel test files never see half a file.
 */
export async function chromiumExecutable(): Promise<string> {
  const executable = join(CACHE, 'chromium');
  const complete = join(CACHE, '.complete');
  if (existsSync(complete)) return executable;
  const staging = `${CACHE}.staging-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const tmpdir = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  try {
    const unpacked = await Chromium.executablePath();
    if (unpacked !== join(staging, 'chromium')) throw new Error(`@sparticuz/chromium unpacked to ${unpacked}, not into ${staging}`);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
  }
  writeFileSync(join(staging, '.complete'), `${VERSION}\n`);
  try {
    renameSync(staging, CACHE);
  } catch (err) {
    // another test file finished first: use its copy
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(complete)) throw err;
  }
  return executable;
}

/**
 * Flags: no sandbox (tests run as root in a container), no calls to Google's services (the machine has no
 * network beyond localhost), Chromium's fake microphone and camera with permission granted, and audio
 * that plays without a user gesture.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-setuid-sandbox',
  '--no-zygote',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--disable-domain-reliability',
  '--use-fake-device-for-media-stream',
  '--use-fake-ui-for-media-stream',
  '--autoplay-policy=no-user-gesture-required',
];

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: await chromiumExecutable(), headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}
