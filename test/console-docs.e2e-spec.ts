import { TestApp, startApp } from './support/app';
import { PageElement, useConsoleBrowser } from './support/console-browser';

// The console's speech, consents and health: console.e2e-spec.ts.

declare const document: { getElementById(id: string): { scrollIntoView(): void } | null };

/** The console's rendered stream document at /console/#stream-api, in a real headless Chromium (issue 20). */
describe('console in a browser: the stream document', () => {
  const s = useConsoleBrowser();

  it('renders the AsyncAPI document of the speech stream: both paths, every message, the three ways to authenticate', async () => {
    await s.page.goto(`${s.t.url}/console/#stream-api`);
    await s.page.waitForSelector('#message-task_failed');
    const page_ = await s.text('#asyncapi');
    for (const path of ['/v1/audio/speech/stream', '/ws/v1/t2a_v2']) expect(page_).toContain(path);
    for (const auth of ['Authorization: Bearer', '?ticket=', '?api_key=']) expect(page_).toContain(auth);
    const messages = await s.page
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
    // the table's columns: a required field says yes, model does; voice_id may be left out for a timbre_weights mix
    const startFields = await s.page.locator('#message-task_start').innerText();
    expect(startFields).toMatch(/\nmodel\s+string\s+yes\s/);
    expect(startFields).toMatch(/voice_setting\.voice_id\s+string\s+Built-in voice/);
    await s.screenshot('stream-api');
    await s.page.evaluate(() => document.getElementById('message-task_start')!.scrollIntoView());
    await s.screenshot('stream-api-messages');
  });

  it('is reached from the description in Swagger UI: its link opens the rendered stream document', async () => {
    const docs = await s.context.newPage();
    await docs.goto(`${s.t.url}/docs/`);
    // Swagger UI opens description links in a new tab
    const [opened] = await Promise.all([
      s.context.waitForEvent('page'),
      docs.click('.info a[href="../console/#stream-api"]'),
    ]);
    await opened.waitForSelector('#message-task_start');
    expect(opened.url()).toBe(`${s.t.url}/console/#stream-api`);
    await opened.close();
    await docs.close();
  });

  it('works offline: the page loads nothing from another origin', async () => {
    const origins = new Set<string>();
    const offline = await s.context.newPage();
    offline.on('request', (request) => {
      if (!request.url().startsWith('data:')) origins.add(new URL(request.url()).origin);
    });
    await offline.goto(`${s.t.url}/console/#stream-api`);
    await offline.waitForSelector('#message-task_start');
    expect([...origins]).toEqual([s.t.url]);
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
