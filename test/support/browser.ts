import { createRequire } from 'node:module';
import { chromium, type Browser } from 'playwright-core';

/**
 * Headless Chromium from `npm ci` alone: @sparticuz/chromium ships the browser (headless shell) inside
 * the npm package, brotli-compressed; playwright-core drives it. Nothing is downloaded and nothing comes
 * from the machine's package manager.
 */

/** The package's CommonJS build (its types are declared as ES modules, so TypeScript cannot import them here). */
const Chromium = createRequire(__filename)('@sparticuz/chromium') as {
  executablePath(input?: string): Promise<string>;
};

/**
 * The browser's path: the package inflates it from its own files into the OS temp directory on the first
 * call of a machine and reuses it after (one test file launches it, so no two inflate at once).
 */
export function chromiumExecutable(): Promise<string> {
  return Chromium.executablePath();
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
  return chromium.launch({
    executablePath: await chromiumExecutable(),
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
  });
}
