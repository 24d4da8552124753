import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { projectRoot } from '../src/common/paths';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { launchChromium } from './support/browser';
import { CHAT_PATH, chatBody } from './support/failover';

const COOLDOWN_MS = 6000;

/** The page's globals, as far as the functions run in the page use them (the project compiles without the DOM library). */
interface PageElement {
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
declare const document: {
  getElementById(id: string): (PageElement & { scrollIntoView(): void }) | null;
  querySelector(selector: string): PageElement | null;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare const localStorage: { length: number };
/**
 * `UPDATE_SCREENSHOTS=1` (npm run screenshots) writes the pictures the README shows; any other run
 * writes them to a temporary folder, so a test run leaves the checkout as it was.
 */
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SCREENSHOTS = UPDATE
  ? join(projectRoot(), 'docs', 'screenshots')
  : mkdtempSync(join(tmpdir(), 'console-screenshots-'));

/** The console at /console/, driven in a real headless Chromium (issue 20). */
describe('console in a browser', () => {
  let flaky: FakeOpenAi;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let key: { id: string; secret: string };

  beforeAll(async () => {
    flaky = await startFakeOpenAi({ name: 'console-flaky' });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: console-flaky, kind: openai, base_url: "${flaky.url}", api_key: k }\n  - { name: echo, kind: echo }\n  - { name: espeak, kind: espeak }\n`,
      'console test',
    );
    [t, browser] = await Promise.all([
      startApp({ gateway, env: { SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS), SVC_BREAKER_THRESHOLD: '2' } }),
      launchChromium(),
    ]);
    key = await t.createKey('console', [
      { provider: 'console-flaky', model: 'gpt-console' },
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ]);
    context = await browser.newContext({ viewport: { width: 1040, height: 760 }, deviceScaleFactor: 1 });
    page = await context.newPage();
    await page.goto(`${t.url}/console/`);
    await page.fill('#key', key.secret);
    await page.click('#key-form button[type=submit]');
    await page.waitForSelector('#speech-voice option[value="en-us"]', { state: 'attached' });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await flaky?.close();
    if (!UPDATE) rmSync(SCREENSHOTS, { recursive: true, force: true });
  });

  const text = (selector: string) => page.locator(selector).innerText();
  const screenshot = async (name: string): Promise<void> => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path, fullPage: false });
    expect(statSync(path).size).toBeGreaterThan(5_000);
  };

  it("keeps the key in the tab's session storage only and shows its last characters", async () => {
    expect(
      await page.evaluate(() => ({ session: sessionStorage.getItem('svc-console-key'), local: localStorage.length })),
    ).toEqual({ session: key.secret, local: 0 });
    expect(await text('#key-status')).toContain(key.secret.slice(-4));
    expect(await page.inputValue('#key')).toBe('');
  });

  it.each(['pcm', 'mp3'])(
    'speaks %s through the WebSocket: audio arrives and plays, with time to first audio, provider and fallback level',
    async (format) => {
      await page.goto(`${t.url}/console/#speech`);
      await page.waitForSelector('#speech-voice option[value="en-us"]', { state: 'attached' });
      await page.selectOption('#speech-voice', 'en-us');
      await page.selectOption('#speech-format', format);
      await page.click('#speak');
      await page.waitForFunction(
        () =>
          ['finished', 'failed'].includes(document.getElementById('speech-status')!.textContent!) ||
          document.getElementById('speech-status')!.textContent!.startsWith('closed'),
        null,
        {
          timeout: 30_000,
        },
      );
      expect(await text('#speech-status')).toBe('finished');
      expect(await page.locator('#error').isHidden()).toBe(true);
      const stats = await page.evaluate(() => ({
        bytes: Number(document.getElementById('speech-bytes')!.dataset.bytes),
        seconds: Number(document.getElementById('speech-duration')!.dataset.seconds),
        ttfa: Number(document.getElementById('speech-ttfa')!.dataset.ms),
      }));
      // two sentences of espeak: a few seconds of audio
      expect(stats.bytes).toBeGreaterThan(format === 'pcm' ? 48_000 : 8_000);
      expect(stats.seconds).toBeGreaterThan(1.5);
      expect(stats.ttfa).toBeGreaterThan(0);
      expect(stats.ttfa).toBeLessThan(20_000);
      expect(await text('#speech-provider')).toBe('espeak');
      expect(await text('#speech-fallback')).toBe('0');
      expect(await text('#speech-auth')).toMatch(/ticket|api_key/);
      // what was heard downloads as a file of that many bytes (a WAV header around pcm)
      const download = await page.evaluate(async () => {
        const link = document.getElementById('speech-download') as PageElement;
        const blob = await (await fetch(link.href)).blob();
        return { hidden: link.hidden, name: link.download, size: blob.size };
      });
      expect(download).toEqual({
        hidden: false,
        name: `speech.${format === 'pcm' ? 'wav' : 'mp3'}`,
        size: stats.bytes + (format === 'pcm' ? 44 : 0),
      });
      if (format === 'mp3') {
        // MediaSource played it: the element holds the buffered audio and its clock moved
        const played = await page.evaluate(() => {
          const player = document.getElementById('speech-player') as PageElement;
          return {
            buffered: player.buffered.length ? player.buffered.end(0) : 0,
            error: player.error?.message ?? null,
          };
        });
        expect(played.error).toBeNull();
        expect(played.buffered).toBeGreaterThan(1.5);
        await page.waitForFunction(
          () => (document.getElementById('speech-player') as PageElement).currentTime > 0.2,
          null,
          { timeout: 10_000 },
        );
        await screenshot('speech');
      }
    },
    60_000,
  );

  it('records the consent phrase from the (fake) microphone, uploads, lists, plays back and deletes it', async () => {
    await page.goto(`${t.url}/console/#consents`);
    await page.fill('#consent-name', 'Consent recorded in the console');
    await page.click('#record-start');
    await page.waitForFunction(() => document.getElementById('record-status')!.textContent!.startsWith('recording '));
    await page.waitForTimeout(1500);
    await page.click('#record-stop');
    await page.waitForFunction(() => !(document.getElementById('consent-upload') as PageElement).disabled);
    expect(await text('#record-status')).toMatch(/^recorded \d+\.\d s \([\d,]+ bytes, audio\/webm/);
    await page.click('#consent-upload');
    await page.waitForFunction(
      () => document.getElementById('consent-status')!.textContent!.startsWith('uploaded vc_'),
      null,
      { timeout: 15_000 },
    );
    const id = (await text('#consent-status')).replace('uploaded ', '');

    // the gateway has it, under this key, as webm audio
    const stored = await t.http
      .get(`/v1/audio/voice_consents/${id}/content`)
      .set('Authorization', `Bearer ${key.secret}`);
    expect(stored.status).toBe(200);
    expect(stored.headers['content-type']).toMatch(/^audio\/webm/);
    expect(stored.body.length).toBeGreaterThan(1_000);

    const row = page.locator(`#consent-list tr[data-id="${id}"]`);
    await row.waitFor();
    expect(await row.innerText()).toContain('Consent recorded in the console');
    await row.locator('.consent-play').click();
    await page.waitForFunction((consent) => document.getElementById('consent-player')!.dataset.consent === consent, id);
    expect(Number(await page.getAttribute('#consent-player', 'data-bytes'))).toBe(stored.body.length);
    await screenshot('consents');

    await row.locator('.consent-delete').click();
    await row.waitFor({ state: 'detached' });
    expect(
      (await t.http.get(`/v1/audio/voice_consents/${id}`).set('Authorization', `Bearer ${key.secret}`)).status,
    ).toBe(404);
  }, 60_000);

  it('shows a provider go down with its cooldown counting, the requests that failed over, and the provider come back', async () => {
    await page.goto(`${t.url}/console/#health`);
    const status = (provider: string) =>
      page.locator(`#health-list tr[data-provider="${provider}"] td:nth-child(2)`).innerText();
    await page.waitForSelector('#health-list tr[data-provider="console-flaky"]');
    expect(await status('console-flaky')).toBe('healthy');
    expect(
      await page.locator('#health-list tr').evaluateAll((rows) => rows.map((r) => (r as PageElement).dataset.provider)),
    ).toEqual(['console-flaky', 'echo', 'espeak']);

    flaky.setMode('error500', { status: 503 });
    const sent: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await t.http
        .post(CHAT_PATH)
        .set('Authorization', `Bearer ${key.secret}`)
        .send(chatBody('gpt-console'));
      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe('echo');
      sent.push(res.headers['x-svc-request-id']);
    }
    await page.waitForFunction(
      () =>
        document.querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(2)')?.textContent ===
        'down',
      null,
      { timeout: 10_000 },
    );
    const cooldown = async () =>
      Number(
        (await page.locator('#health-list tr[data-provider="console-flaky"] td:nth-child(4)').innerText()).replace(
          ' s',
          '',
        ),
      );
    const first = await cooldown();
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(COOLDOWN_MS / 1000);
    // it counts down between polls
    await page.waitForFunction(
      (before) =>
        Number(
          document
            .querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(4)')
            ?.textContent?.replace(' s', ''),
        ) < before,
      first,
      { timeout: 3_000 },
    );
    expect(await page.locator('#health-list tr[data-provider="console-flaky"] td:nth-child(3)').innerText()).toBe('2');
    expect(await text('#health-overall')).toBe('degraded');

    // the newest requests first: served by echo at fallback level 1; ten a page, the older ones on the next
    await page.waitForFunction(
      (newest) => document.querySelector('#usage-list tr')?.dataset.request === newest,
      sent[11],
      { timeout: 10_000 },
    );
    const usageRows = () =>
      page
        .locator('#usage-list tr')
        .evaluateAll((rows) => rows.map((r) => Array.from((r as PageElement).cells, (c) => c.textContent)));
    const newest = await usageRows();
    expect(newest).toHaveLength(10);
    expect(newest.map((cells) => cells[1])).toEqual(sent.slice(2).reverse());
    for (const cells of newest) expect(cells.slice(2, 5).concat(cells[6])).toEqual(['chat', 'echo', '1', '200']);
    await screenshot('health');

    await page.click('#usage-older');
    await page.waitForFunction(() => document.getElementById('usage-page')!.textContent === 'page 2');
    // then the two oldest chat requests, then the speech of the earlier test (one record per piece)
    const older = await usageRows();
    expect(older.slice(0, 2).map((cells) => cells[1])).toEqual([sent[1], sent[0]]);
    expect(older.slice(2).map((cells) => cells[2])).toEqual(older.slice(2).map(() => 'speech'));
    await page.click('#usage-newer');
    await page.waitForFunction(() => document.getElementById('usage-page')!.textContent === 'page 1');

    // the provider recovers: the probe after the cooldown succeeds and the page says so
    flaky.setMode('ok');
    await page.waitForFunction(
      () =>
        document.querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(2)')?.textContent ===
        'healthy',
      null,
      { timeout: COOLDOWN_MS + 10_000 },
    );
    expect(await text('#health-overall')).toBe('operational');
  }, 60_000);

  it('renders the AsyncAPI document of the speech stream: both paths, every message, the three ways to authenticate', async () => {
    await page.goto(`${t.url}/console/#stream-api`);
    await page.waitForSelector('#message-task_failed');
    const page_ = await text('#asyncapi');
    for (const path of ['/v1/audio/speech/stream', '/ws/v1/t2a_v2']) expect(page_).toContain(path);
    for (const auth of ['Authorization: Bearer', '?ticket=', '?api_key=']) expect(page_).toContain(auth);
    const messages = await page
      .locator('#asyncapi .message')
      .evaluateAll((nodes) => nodes.map((n) => (n as PageElement).id));
    expect(messages).toEqual(
      [
        'connected_success',
        'task_start',
        'task_started',
        'task_continue',
        'task_continued',
        'task_finish',
        'task_finished',
        'task_failed',
      ].map((m) => `message-${m}`),
    );
    expect(await page.locator('#message-task_start').innerText()).toMatch(/voice_setting\.voice_id\s+string\s+yes/);
    await screenshot('stream-api');
    await page.evaluate(() => document.getElementById('message-task_start')!.scrollIntoView());
    await screenshot('stream-api-messages');
  });

  it('is reached from the description in Swagger UI: its link opens the rendered stream document', async () => {
    const docs = await context.newPage();
    await docs.goto(`${t.url}/docs/`);
    // Swagger UI opens description links in a new tab
    const [opened] = await Promise.all([
      context.waitForEvent('page'),
      docs.click('.info a[href="../console/#stream-api"]'),
    ]);
    await opened.waitForSelector('#message-task_start');
    expect(opened.url()).toBe(`${t.url}/console/#stream-api`);
    await opened.close();
    await docs.close();
  });

  it('works offline: the page loads nothing from another origin', async () => {
    const origins = new Set<string>();
    const offline = await context.newPage();
    offline.on('request', (request) => {
      if (!request.url().startsWith('data:')) origins.add(new URL(request.url()).origin);
    });
    await offline.goto(`${t.url}/console/#stream-api`);
    await offline.waitForSelector('#message-task_start');
    expect([...origins]).toEqual([t.url]);
    await offline.close();
  });
});

describe('console files', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('are served at /console/ without a key, with a policy that allows only this origin', async () => {
    const redirect = await t.http.get('/console');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('/console/');
    const index = await t.http.get('/console/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toMatch(/^text\/html/);
    expect(index.headers['content-security-policy']).toContain("default-src 'self'");
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.text).toContain('<script type="module" src="app.js">');
    const script = await t.http.get('/console/app.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    // the key stays in the tab: the script never writes it to localStorage or a cookie
    expect(script.text).not.toMatch(/localStorage|document\.cookie/);
    const missing = await t.http.get('/console/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ type: 'not_found_error' });
  });
});
