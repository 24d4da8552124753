import { COOLDOWN_MS, PageElement, useConsoleBrowser } from './support/console-browser';
import { CHAT_PATH, chatBody } from './support/failover';

// The console's documents (the stream's AsyncAPI page, from Swagger UI, offline) and its files:
// console-docs.e2e-spec.ts.

declare const document: {
  getElementById(id: string): (PageElement & { scrollIntoView(): void }) | null;
  querySelector(selector: string): PageElement | null;
};
declare const sessionStorage: { getItem(key: string): string | null };
declare const localStorage: { length: number };

/** The console at /console/, driven in a real headless Chromium (issue 20). */
describe('console in a browser', () => {
  const s = useConsoleBrowser();

  it("keeps the key in the tab's session storage only and shows its last characters", async () => {
    expect(
      await s.page.evaluate(() => ({ session: sessionStorage.getItem('svc-console-key'), local: localStorage.length })),
    ).toEqual({ session: s.key.secret, local: 0 });
    expect(await s.text('#key-status')).toContain(s.key.secret.slice(-4));
    expect(await s.page.inputValue('#key')).toBe('');
  });

  it.each([
    ['en-US', 'en-us'],
    ['de-DE', 'de'],
  ])('offers first the voice of the browser language %s (%s), not the first of the list', async (locale, voice) => {
    const context = await s.browser.newContext({ locale });
    try {
      const page = await context.newPage();
      await page.goto(`${s.t.url}/console/#speech`);
      await page.fill('#key', s.key.secret);
      await page.click('#key-form button[type=submit]');
      await page.waitForSelector(`#speech-voice option[value="${voice}"]`, { state: 'attached' });
      // the list starts with other voices (OpenAI's, then espeak's Afrikaans): the default follows the browser's language
      expect(await page.locator('#speech-voice option').first().getAttribute('value')).not.toBe(voice);
      expect(await page.inputValue('#speech-voice')).toBe(voice);
    } finally {
      await context.close();
    }
  });

  it('says a key the gateway refuses is not accepted, and clears its error on another page', async () => {
    const page = await s.context.newPage();
    try {
      await page.goto(`${s.t.url}/console/#speech`);
      await page.fill('#key', 'sk-svc-not-a-key-of-this-gateway-0000000000');
      await page.click('#key-form button[type=submit]');
      await page.waitForFunction(() => document.getElementById('key-status')!.textContent!.includes('not accepted'));
      expect(await page.locator('#key-status').innerText()).toBe('key …0000 is not accepted by the gateway');
      expect(await page.locator('#error').innerText()).toContain('invalid_api_key');
      await page.click('nav a[data-page="stream-api"]');
      // the page changes on the hashchange that follows the click: once its section shows, the error is gone
      await page.waitForSelector('#page-stream-api', { state: 'visible' });
      expect(await page.locator('#error').isHidden()).toBe(true);

      await page.fill('#key', s.key.secret);
      await page.click('#key-form button[type=submit]');
      await page.waitForFunction(() => document.getElementById('key-status')!.textContent!.includes(' accepted'));
      expect(await page.locator('#key-status').innerText()).toBe(
        `key …${s.key.secret.slice(-4)} accepted (this tab only)`,
      );
    } finally {
      await page.close();
    }
  });

  it.each(['pcm', 'mp3'])(
    'speaks %s through the WebSocket: audio arrives and plays, with time to first audio, provider and fallback level',
    async (format) => {
      await s.page.goto(`${s.t.url}/console/#speech`);
      await s.page.waitForSelector('#speech-voice option[value="en-us"]', { state: 'attached' });
      await s.page.selectOption('#speech-voice', 'en-us');
      await s.page.selectOption('#speech-format', format);
      await s.page.click('#speak');
      await s.page.waitForFunction(
        () =>
          ['finished', 'failed'].includes(document.getElementById('speech-status')!.textContent!) ||
          document.getElementById('speech-status')!.textContent!.startsWith('closed'),
        null,
        {
          timeout: 30_000,
        },
      );
      expect(await s.text('#speech-status')).toBe('finished');
      expect(await s.page.locator('#error').isHidden()).toBe(true);
      const stats = await s.page.evaluate(() => ({
        bytes: Number(document.getElementById('speech-bytes')!.dataset.bytes),
        seconds: Number(document.getElementById('speech-duration')!.dataset.seconds),
        ttfa: Number(document.getElementById('speech-ttfa')!.dataset.ms),
      }));
      // two sentences of espeak: a few seconds of audio
      expect(stats.bytes).toBeGreaterThan(format === 'pcm' ? 48_000 : 8_000);
      expect(stats.seconds).toBeGreaterThan(1.5);
      expect(stats.ttfa).toBeGreaterThan(0);
      expect(stats.ttfa).toBeLessThan(20_000);
      expect(await s.text('#speech-provider')).toBe('espeak');
      expect(await s.text('#speech-fallback')).toBe('0');
      expect(await s.text('#speech-auth')).toMatch(/ticket|api_key/);
      // what was heard downloads as a file of that many bytes (a WAV header around pcm)
      const download = await s.page.evaluate(async () => {
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
        const played = await s.page.evaluate(() => {
          const player = document.getElementById('speech-player') as PageElement;
          return {
            buffered: player.buffered.length ? player.buffered.end(0) : 0,
            error: player.error?.message ?? null,
          };
        });
        expect(played.error).toBeNull();
        expect(played.buffered).toBeGreaterThan(1.5);
        await s.page.waitForFunction(
          () => (document.getElementById('speech-player') as PageElement).currentTime > 0.2,
          null,
          { timeout: 10_000 },
        );
        await s.screenshot('speech');
      }
    },
    60_000,
  );

  it('records the consent phrase from the (fake) microphone, uploads, lists, plays back and deletes it', async () => {
    await s.page.goto(`${s.t.url}/console/#consents`);
    await s.page.fill('#consent-name', 'Consent recorded in the console');
    await s.page.click('#record-start');
    await s.page.waitForFunction(() => document.getElementById('record-status')!.textContent!.startsWith('recording '));
    await s.page.waitForTimeout(1500);
    await s.page.click('#record-stop');
    await s.page.waitForFunction(() => !(document.getElementById('consent-upload') as PageElement).disabled);
    expect(await s.text('#record-status')).toMatch(/^recorded \d+\.\d s \([\d,]+ bytes, audio\/webm/);
    await s.page.click('#consent-upload');
    await s.page.waitForFunction(
      () => document.getElementById('consent-status')!.textContent!.startsWith('uploaded vc_'),
      null,
      { timeout: 15_000 },
    );
    const id = (await s.text('#consent-status')).replace('uploaded ', '');

    // the gateway has it, under this key, as webm audio
    const stored = await s.t.http
      .get(`/v1/audio/voice_consents/${id}/content`)
      .set('Authorization', `Bearer ${s.key.secret}`);
    expect(stored.status).toBe(200);
    expect(stored.headers['content-type']).toMatch(/^audio\/webm/);
    expect(stored.body.length).toBeGreaterThan(1_000);

    const row = s.page.locator(`#consent-list tr[data-id="${id}"]`);
    await row.waitFor();
    expect(await row.innerText()).toContain('Consent recorded in the console');
    await row.locator('.consent-play').click();
    await s.page.waitForFunction(
      (consent) => document.getElementById('consent-player')!.dataset.consent === consent,
      id,
    );
    expect(Number(await s.page.getAttribute('#consent-player', 'data-bytes'))).toBe(stored.body.length);
    await s.screenshot('consents');

    await row.locator('.consent-delete').click();
    await row.waitFor({ state: 'detached' });
    expect(
      (await s.t.http.get(`/v1/audio/voice_consents/${id}`).set('Authorization', `Bearer ${s.key.secret}`)).status,
    ).toBe(404);
  }, 60_000);

  it('shows a provider go down with its cooldown counting, the requests that failed over, and the provider come back', async () => {
    await s.page.goto(`${s.t.url}/console/#health`);
    const status = (provider: string) =>
      s.page.locator(`#health-list tr[data-provider="${provider}"] td:nth-child(2)`).innerText();
    await s.page.waitForSelector('#health-list tr[data-provider="console-flaky"]');
    expect(await status('console-flaky')).toBe('healthy');
    expect(
      await s.page
        .locator('#health-list tr')
        .evaluateAll((rows) => rows.map((r) => (r as PageElement).dataset.provider)),
    ).toEqual(['console-flaky', 'echo', 'espeak']);

    s.flaky.setMode('error500', { status: 503 });
    const sent: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await s.t.http
        .post(CHAT_PATH)
        .set('Authorization', `Bearer ${s.key.secret}`)
        .send(chatBody('gpt-console'));
      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe('echo');
      sent.push(res.headers['x-svc-request-id']);
    }
    await s.page.waitForFunction(
      () =>
        document.querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(2)')?.textContent ===
        'down',
      null,
      { timeout: 10_000 },
    );
    const cooldown = async () =>
      Number(
        (await s.page.locator('#health-list tr[data-provider="console-flaky"] td:nth-child(4)').innerText()).replace(
          ' s',
          '',
        ),
      );
    const first = await cooldown();
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(COOLDOWN_MS / 1000);
    // it counts down between polls
    await s.page.waitForFunction(
      (before) =>
        Number(
          document
            .querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(4)')
            ?.textContent?.replace(' s', ''),
        ) < before,
      first,
      { timeout: 3_000 },
    );
    expect(await s.page.locator('#health-list tr[data-provider="console-flaky"] td:nth-child(3)').innerText()).toBe(
      '2',
    );
    expect(await s.text('#health-overall')).toBe('degraded');

    // the newest requests first: served by echo at fallback level 1; ten a page, the older ones on the next
    await s.page.waitForFunction(
      (newest) => document.querySelector('#usage-list tr')?.dataset.request === newest,
      sent[11],
      { timeout: 10_000 },
    );
    const usageRows = () =>
      s.page
        .locator('#usage-list tr')
        .evaluateAll((rows) => rows.map((r) => Array.from((r as PageElement).cells, (c) => c.textContent)));
    const newest = await usageRows();
    expect(newest).toHaveLength(10);
    expect(newest.map((cells) => cells[1])).toEqual(sent.slice(2).reverse());
    for (const cells of newest) expect(cells.slice(2, 5).concat(cells[6])).toEqual(['chat', 'echo', '1', '200']);
    await s.screenshot('health');

    await s.page.click('#usage-older');
    await s.page.waitForFunction(() => document.getElementById('usage-page')!.textContent === 'page 2');
    // then the two oldest chat requests, then the speech of the earlier test (one record per piece)
    const older = await usageRows();
    expect(older.slice(0, 2).map((cells) => cells[1])).toEqual([sent[1], sent[0]]);
    expect(older.slice(2).map((cells) => cells[2])).toEqual(older.slice(2).map(() => 'speech'));
    await s.page.click('#usage-newer');
    await s.page.waitForFunction(() => document.getElementById('usage-page')!.textContent === 'page 1');

    // the provider recovers: once the cooldown is over, the next real request is the breaker's trial (decisions
    // §3); its success makes the provider healthy, and the page says so
    s.flaky.setMode('ok');
    const trialBy = Date.now() + COOLDOWN_MS + 10_000;
    for (;;) {
      const res = await s.t.http
        .post(CHAT_PATH)
        .set('Authorization', `Bearer ${s.key.secret}`)
        .send(chatBody('gpt-console'));
      if (res.headers['x-svc-provider-used'] === 'console-flaky' || Date.now() > trialBy) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await s.page.waitForFunction(
      () =>
        document.querySelector('#health-list tr[data-provider="console-flaky"] td:nth-child(2)')?.textContent ===
        'healthy',
      null,
      { timeout: COOLDOWN_MS + 10_000 },
    );
    expect(await s.text('#health-overall')).toBe('operational');
  }, 60_000);
});
