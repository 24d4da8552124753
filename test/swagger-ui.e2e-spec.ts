import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { projectRoot } from '../src/common/paths';
import { tinyWav } from './support/audio';
import { launchChromium } from './support/browser';
import { ServiceProcess, spawnService } from './support/process';

/** `UPDATE_SCREENSHOTS=1` (npm run screenshots) writes the picture the README shows; any other run, a temporary folder. */
const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
const SCREENSHOTS = UPDATE
  ? join(projectRoot(), 'docs', 'screenshots')
  : mkdtempSync(join(tmpdir(), 'swagger-screenshots-'));

/** An element of the page, as far as the functions run in the page use it (the project compiles without the DOM library). */
interface PageElement {
  id: string;
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
interface Operation {
  id: string;
  method: Method;
  path: string;
  multipart: string[];
}

/** Every operation of the committed document (openapi.e2e-spec fails when it differs from the served one). */
function documentOperations(): Operation[] {
  const document = JSON.parse(readFileSync(join(projectRoot(), 'openapi', 'openapi.json'), 'utf8')) as {
    paths: Record<string, Partial<Record<Method, { operationId: string; requestBody?: { content: object } }>>>;
    components: { schemas: Record<string, { properties?: Record<string, { format?: string }> }> };
  };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    (Object.entries(item) as Array<[Method, { operationId: string; requestBody?: { content: object } }]>).map(
      ([method, operation]) => {
        const form = (operation.requestBody?.content as Record<string, { schema?: { $ref?: string } }> | undefined)?.[
          'multipart/form-data'
        ];
        const schema = form?.schema?.$ref ? document.components.schemas[form.schema.$ref.split('/').pop()!] : undefined;
        const files = Object.entries(schema?.properties ?? {})
          .filter(([, property]) => property.format === 'binary')
          .map(([name]) => name);
        return { id: operation.operationId, method, path, multipart: files };
      },
    ),
  );
}

const OPERATIONS = documentOperations();

/** Answers whose body is audio: Swagger UI must offer the bytes it received as a download. */
const AUDIO_DOWNLOADS = new Set(['Speech_create', 'SpeechTasks_download', 'Consents_content']);

/**
 * What cannot succeed on a fresh start: making a custom voice needs a provider that clones or designs voices
 * (MiniMax, OpenAI), and the offline chain has none. Swagger UI shows the documented refusal, which says so;
 * without a voice, reading or deleting one is a 404.
 */
const REFUSED_OFFLINE: Record<string, { status: number; says: string }> = {
  CustomVoices_create: { status: 400, says: 'voice_creation_not_supported' },
  CustomVoices_design: { status: 400, says: 'voice_creation_not_supported' },
  CustomVoices_get: { status: 404, says: 'not_found' },
  CustomVoices_delete: { status: 404, says: 'not_found' },
  // MiniMax's routes answer refusals with HTTP 200 and a non-zero base_resp, as MiniMax does
  MiniMaxVoices_clone: { status: 200, says: '"status_code": 2' },
  MiniMaxVoices_design: { status: 200, says: '"status_code": 2' },
};

/** A fresh `npm start`: embedded database, the default config/gateway.yaml (no upstream key set), the printed demo key. */
describe('Swagger UI on a fresh npm start', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let browser: Browser;
  let page: Page;
  let url: string;
  let demoKey: string;
  let adminToken: string;

  const api = async (path: string, init: RequestInit & { admin?: boolean } = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${init.admin ? adminToken : demoKey}`);
    if (typeof init.body === 'string') headers.set('Content-Type', 'application/json');
    const res = await fetch(`${url}${path}`, { ...init, headers });
    expect(res.ok).toBe(true);
    return res;
  };
  const json = async <T>(path: string, init?: RequestInit & { admin?: boolean }): Promise<T> =>
    (await (await api(path, init)).json()) as T;
  const until = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    for (let i = 0; i < 150; i++) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('timed out');
  };
  const post = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) });
  const speech = { model: 'speech-02-hd', text: 'Made for the test.', voice_setting: { voice_id: 'en-us' } };

  /**
   * Ids a user takes from an earlier answer and types in: each is made through the API first (a fresh one
   * for every operation, so a DELETE before a GET in the document's order takes nothing from the GET).
   */
  const IDS: Record<string, (operation: Operation) => Promise<string>> = {
    key_id: async () =>
      (
        await json<{ id: string }>('/v1/admin/keys', {
          ...post({ name: 'swagger-ui', chain: [{ provider: 'echo', model: 'echo-1' }] }),
          admin: true,
        })
      ).id,
    consent_id: async () => {
      const form = new FormData();
      form.append('recording', new Blob([tinyWav()], { type: 'audio/wav' }), 'consent.wav');
      form.append('language', 'en-US');
      form.append('name', 'Consent for Swagger UI');
      return (await json<{ id: string }>('/v1/audio/voice_consents', { method: 'POST', body: form })).id;
    },
    task_id: async (operation) => {
      if (operation.path.startsWith('/v1/query/')) return minimaxTask();
      const task = await json<{ id: string }>('/v1/audio/speech/async', post(speech));
      await until(
        () => json<{ status: string }>(`/v1/audio/speech/async/${task.id}`),
        (t) => t.status === 'completed',
      );
      return task.id;
    },
    file_id: () => minimaxTask(),
    webhook_id: async () =>
      (await json<{ id: string }>('/v1/user/webhooks', post({ url: 'https://example.com/gateway-events' }))).id,
    // no voice can be made offline (REFUSED_OFFLINE): the id of one that does not exist
    voice_id: () => Promise.resolve('voice_0000000000000000000000'),
    token: async () => {
      const answer = await json<{ data: { audio: string } }>('/v1/t2a_v2', post({ ...speech, output_format: 'url' }));
      return answer.data.audio
        .split('/')
        .pop()!
        .replace(/\.mp3$/, '');
    },
  };
  /** A finished MiniMax async task: its task_id is also the file_id of its audio. */
  const minimaxTask = async (): Promise<string> => {
    const { task_id } = await json<{ task_id: string }>('/v1/t2a_async_v2', post(speech));
    await until(
      () => json<{ status: string }>(`/v1/query/t2a_async_query_v2?task_id=${task_id}`),
      (t) => t.status === 'Success',
    );
    return task_id;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-swagger-ui-'));
    let launched: Browser | undefined;
    [service, launched] = await Promise.all([
      Promise.resolve(
        spawnService({
          DATABASE_URL: undefined,
          SVC_ADMIN_TOKEN: undefined,
          SVC_DEMO_KEY: undefined,
          SVC_CONFIG: undefined,
          OPENAI_API_KEY: undefined,
          MINIMAX_API_KEY: undefined,
          SVC_DATA_DIR: dataDir,
          PORT: '0',
          HOST: '127.0.0.1',
        }),
      ),
      launchChromium(),
    ]);
    browser = launched!;
    [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60_000);
    [, adminToken] = await service.waitFor(/Admin token \([^)]*\): (adm-[0-9A-Za-z]+)/);
    [, demoKey] = await service.waitFor(/Demo key \(shown once, keep it\): (sk-svc-[0-9A-Za-z]+)/);
    page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await page.goto(`${url}/docs`);
    await page.waitForSelector('.opblock');

    // Authorize: the demo key for proxy-key operations, the admin token for admin ones, as the banner says
    await page.click('.auth-wrapper button.authorize');
    for (const [scheme, secret] of [
      ['proxy-key', demoKey],
      ['admin', adminToken],
    ]) {
      const container = page.locator('.auth-container', { has: page.locator(`h4 code:text-is("${scheme}")`) });
      await container.locator('input').fill(secret);
      await container.locator('button.authorize').click();
    }
    await page.locator('.modal-ux button.close-modal').click();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    service?.child.kill('SIGTERM');
    if (service) await service.exited;
    rmSync(dataDir, { recursive: true, force: true });
    if (!UPDATE) rmSync(SCREENSHOTS, { recursive: true, force: true });
  });

  it('gives every JSON request body of the committed document an example', () => {
    const document = JSON.parse(readFileSync(join(projectRoot(), 'openapi', 'openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, object> } }>>;
    };
    const without = Object.values(document.paths)
      .flatMap((item) => Object.values(item))
      .filter((operation) => {
        const json = operation.requestBody?.content['application/json'];
        return json && !('example' in json) && !('examples' in json);
      })
      .map((operation) => operation.operationId);
    expect(without).toEqual([]);
  });

  it('shows every operation of the document', async () => {
    const shown = await page
      .locator('.opblock')
      .evaluateAll((nodes) => nodes.map((n) => (n as PageElement).id.split('-').pop()));
    expect(shown.sort()).toEqual(OPERATIONS.map((o) => o.id).sort());
  });

  it.each(OPERATIONS.map((o) => [o.id, REFUSED_OFFLINE[o.id] ? 'the refusal that says why' : 'a success', o] as const))(
    '%s: Try it out, then Execute with the shown example, answers %s',
    async (_id, _outcome, operation) => {
      const block = page.locator(`.opblock[id$="-${operation.id}"]`);
      await block.locator('.opblock-summary-control').click();
      await block.locator('button.try-out__btn').click();
      // required path and query parameters that Swagger UI leaves empty: an id from an earlier answer
      const empty = block.locator('tr[data-param-name] input[type=text]');
      for (const input of await empty.all()) {
        if ((await input.inputValue()) !== '') continue;
        const row = input.locator('xpath=ancestor::tr[@data-param-name]');
        const name = (await row.getAttribute('data-param-name'))!;
        if (!(await row.locator('.parameter__name.required').count())) continue;
        const source = IDS[name];
        if (!source) throw new Error(`no id for the required parameter ${name} of ${operation.id}`);
        await input.fill(await source(operation));
      }
      for (const field of operation.multipart) {
        await block
          .locator(`tr[data-property-name="${field}"] input[type=file]`)
          .setInputFiles({ name: 'sample.wav', mimeType: 'audio/wav', buffer: tinyWav() });
      }
      // a cloned voice names the consent of the person whose voice it is: one uploaded earlier
      const consent = block.locator('tr[data-property-name="consent"] input[type=text]');
      if ((await consent.count()) > 0) await consent.fill(await IDS.consent_id(operation));
      await block.locator('button.execute').click();
      const status = block.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor({ timeout: 30_000 });
      const shown = Number((await status.innerText()).trim());
      const body = await responseText(block);
      const refused = REFUSED_OFFLINE[operation.id];
      if (refused) {
        expect({ status: shown, body }).toEqual({
          status: refused.status,
          body: expect.stringContaining(refused.says),
        });
      } else {
        if (shown < 200 || shown > 299) throw new Error(`${operation.id} answered ${shown}: ${body.slice(0, 500)}`);
        expect(shown).toBeGreaterThanOrEqual(200);
      }
      if (AUDIO_DOWNLOADS.has(operation.id)) {
        const download = await blobDownload(block);
        expect(download.name).toMatch(/^(speech-(req|task)_[0-9A-Za-z_]+\.mp3|vc_[0-9A-Za-z]+\.wav)$/);
        expect(download.size).toBeGreaterThan(1_000);
        if (operation.id === 'Speech_create') await screenshot(block, 'swagger-speech');
      }
      await block.locator('.opblock-summary-control').click();
    },
    40_000,
  );

  const responseText = async (block: Locator): Promise<string> => {
    const description = block.locator('.live-responses-table tr.response .response-col_description').first();
    return (await description.innerText()).trim();
  };

  /** The "Download file" link Swagger UI draws for an attachment: its file name and the size of the blob it holds. */
  const blobDownload = async (block: Locator): Promise<{ name: string; size: number }> => {
    const link = block.locator('.live-responses-table a[download]');
    await link.waitFor();
    expect(await link.innerText()).toBe('Download file');
    const href = (await link.getAttribute('href'))!;
    expect(href).toMatch(/^blob:/);
    const size = await page.evaluate(async (blob) => (await (await fetch(blob)).blob()).size, href);
    return { name: (await link.getAttribute('download'))!, size };
  };

  const screenshot = async (block: Locator, name: string): Promise<void> => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, `${name}.png`);
    await block.locator('.live-responses-table').scrollIntoViewIfNeeded();
    await page.screenshot({ path, clip: (await block.locator('.live-responses-table').boundingBox()) ?? undefined });
    expect(statSync(path).size).toBeGreaterThan(5_000);
  };
});
