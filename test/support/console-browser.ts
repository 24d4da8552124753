import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { projectRoot } from '../../src/common/paths';
import { parseGatewayConfig } from '../../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from '../fakes/fake-openai';
import { startApp, TestApp } from './app';
import { launchChromium } from './browser';

export const COOLDOWN_MS = 6000;

/** The page's globals, as far as the functions run in the page use them (the project compiles without the DOM library). */
export interface PageElement {
  id: string;
  textContent: string | null;
  dataset: Record<string, string | undefined>;
  hidden: boolean;
  disabled: boolean;
  download: string;
  href: string;
  currentTime: number;
  buffered: { length: number; end(index: number): number };
  error: { message: string } | null;
  cells: ArrayLike<PageElement>;
}

/**
 * `UPDATE_SCREENSHOTS=1` (npm run screenshots) writes the pictures the README shows; any other run
 * writes them to a temporary folder, so a test run leaves the checkout as it was.
 */
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';

export interface ConsoleBrowser {
  flaky: FakeOpenAi;
  t: TestApp;
  browser: Browser;
  context: BrowserContext;
  /** The console, its key entered (the speech voices listed). */
  page: Page;
  key: { id: string; secret: string };
  text: (selector: string) => Promise<string>;
  screenshot: (name: string) => Promise<void>;
}

/**
 * Starts, around the calling describe, the app (a fake OpenAI `console-flaky`, echo, espeak; breaker threshold 2,
 * cooldown COOLDOWN_MS) and a headless Chromium on its console with a key entered; returns them, filled in beforeAll.
 */
export function useConsoleBrowser(): ConsoleBrowser {
  const s = {} as ConsoleBrowser;
  const screenshots = UPDATE
    ? join(projectRoot(), 'docs', 'screenshots')
    : mkdtempSync(join(tmpdir(), 'console-screenshots-'));
  beforeAll(async () => {
    s.flaky = await startFakeOpenAi({ name: 'console-flaky' });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: console-flaky, kind: openai, base_url: "${s.flaky.url}", api_key: k }\n  - { name: echo, kind: echo }\n  - { name: espeak, kind: espeak }\n`,
      'console test',
    );
    [s.t, s.browser] = await Promise.all([
      startApp({ gateway, env: { SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS), SVC_BREAKER_THRESHOLD: '2' } }),
      launchChromium(),
    ]);
    s.key = await s.t.createKey('console', [
      { provider: 'console-flaky', model: 'gpt-console' },
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ]);
    s.context = await s.browser.newContext({ viewport: { width: 1040, height: 760 }, deviceScaleFactor: 1 });
    s.page = await s.context.newPage();
    await s.page.goto(`${s.t.url}/console/`);
    await s.page.fill('#key', s.key.secret);
    await s.page.click('#key-form button[type=submit]');
    await s.page.waitForSelector('#speech-voice option[value="en-us"]', { state: 'attached' });
  }, 120_000);
  afterAll(async () => {
    await s.browser?.close();
    await s.t?.close();
    await s.flaky?.close();
    if (!UPDATE) rmSync(screenshots, { recursive: true, force: true });
  });

  s.text = (selector) => s.page.locator(selector).innerText();
  s.screenshot = async (name) => {
    mkdirSync(screenshots, { recursive: true });
    const path = join(screenshots, `${name}.png`);
    await s.page.screenshot({ path, fullPage: false });
    expect(statSync(path).size).toBeGreaterThan(5_000);
  };
  return s;
}
