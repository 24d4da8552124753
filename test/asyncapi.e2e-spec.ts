import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { startApp, TestApp } from './support/app';

type Json = Record<string, unknown>;

/** Every `$ref` in the document, with where it points (a local JSON pointer). */
function refsOf(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => refsOf(item, found));
  else if (typeof value === 'object' && value !== null) {
    for (const [name, inner] of Object.entries(value)) {
      if (name === '$ref' && typeof inner === 'string') found.push(inner);
      else refsOf(inner, found);
    }
  }
  return found;
}

const at = (document: Json, pointer: string): unknown =>
  pointer
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>(
      (node, part) => (node as Json | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')],
      document,
    );

const CLIENT_MESSAGES = ['task_start', 'task_continue', 'task_finish'];
const SERVER_MESSAGES = ['connected_success', 'task_started', 'task_continued', 'task_finished', 'task_failed'];

describe('AsyncAPI document of the speech stream', () => {
  let t: TestApp;
  let served: Json;
  beforeAll(async () => {
    t = await startApp();
    const res = await t.http.get('/asyncapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    served = res.body as Json;
  });
  afterAll(() => t.close());

  it('matches the committed asyncapi/asyncapi.json (run `npm run openapi` after changing the stream or the speech settings)', () => {
    const root = projectRoot();
    const generated = execFileSync(process.execPath, [join(root, 'dist/src/bin/write-asyncapi.js'), '--stdout'], {
      encoding: 'utf8',
    });
    expect(generated).toBe(readFileSync(join(root, 'asyncapi/asyncapi.json'), 'utf8'));
    expect(JSON.parse(generated)).toEqual(served);
  });

  it('is AsyncAPI 3 with both paths, every message in its direction, and every $ref resolving', () => {
    expect(served.asyncapi).toBe('3.0.0');
    const channels = served.channels as Record<string, { address: string; messages: Record<string, unknown> }>;
    expect(Object.values(channels).map((c) => c.address)).toEqual(['/v1/audio/speech/stream', '/ws/v1/t2a_v2']);
    for (const channel of Object.values(channels))
      expect(Object.keys(channel.messages).sort()).toEqual([...CLIENT_MESSAGES, ...SERVER_MESSAGES].sort());
    type Operation = {
      action: string;
      messages: Array<{ $ref: string }>;
      reply?: { messages: Array<{ $ref: string }> };
    };
    const operations = Object.values(served.operations as Record<string, Operation>);
    const names = (messages: Array<{ $ref: string }> = []) =>
      messages.map((m) => m.$ref.slice(m.$ref.lastIndexOf('/') + 1));
    // the gateway's point of view: it receives the client's messages and sends (or replies with) its own
    const received = new Set(operations.filter((o) => o.action === 'receive').flatMap((o) => names(o.messages)));
    const sent = new Set(
      operations.flatMap((o) => (o.action === 'send' ? names(o.messages) : names(o.reply?.messages))),
    );
    expect([...received].sort()).toEqual([...CLIENT_MESSAGES].sort());
    expect([...sent].sort()).toEqual([...SERVER_MESSAGES].sort());
    for (const ref of refsOf(served))
      expect({ ref, target: at(served, ref) !== undefined }).toEqual({ ref, target: true });
  });

  it('says when the key is checked as docs/websocket.md does: on the upgrade and on every client message', () => {
    const description = JSON.stringify(served);
    const page = readFileSync(join(projectRoot(), 'docs/websocket.md'), 'utf8');
    for (const text of [description, page]) {
      expect(text).toMatch(/checked on the upgrade/);
      expect(text).toMatch(/every client message/);
      expect(text).toContain('key_revoked');
    }
    expect(description).not.toMatch(/checked once/);
  });

  it('documents the ticket, the bearer header and ?api_key=, and the task_start fields of synchronous speech (without wav)', () => {
    const components = served.components as Json;
    expect(components.securitySchemes).toMatchObject({
      bearer: { type: 'http', scheme: 'bearer' },
      ticket: { type: 'httpApiKey', in: 'query', name: 'ticket' },
      apiKey: { type: 'httpApiKey', in: 'query', name: 'api_key' },
    });
    expect((components.securitySchemes as Json).ticket).toMatchObject({
      description: expect.stringContaining('POST /v1/audio/speech/stream/tickets'),
    });
    const start = (components.schemas as Json).TaskStart as {
      required: string[];
      properties: Json;
      additionalProperties: boolean;
    };
    expect(start.required).toEqual(expect.arrayContaining(['event', 'model']));
    // optional since a MiniMax mix may name its voices by timbre_weights alone (decisions §10)
    expect(start.required).not.toContain('voice_setting');
    expect(start.properties).toHaveProperty('voice_setting');
    expect(start.properties).toHaveProperty('timbre_weights');
    expect(start.properties).not.toHaveProperty('text');
    expect(start.additionalProperties).toBe(false);
    const audio = at(served, (start.properties.audio_setting as { $ref: string }).$ref) as {
      properties: { format: { enum: string[] } };
    };
    // the formats that stream: not wav nor pcmu_wav (their header needs the length)
    expect(audio.properties.format.enum).toEqual(['mp3', 'pcm', 'flac', 'opus', 'pcmu_raw']);
    const voice = at(served, (start.properties.voice_setting as { $ref: string }).$ref) as {
      properties: { vol: Json };
    };
    // JSON Schema draft 07, not OpenAPI 3.0: a numeric exclusive bound
    expect(voice.properties.vol).toMatchObject({ exclusiveMinimum: 0, maximum: 10 });
  });

  it('is linked from the description Swagger UI shows', async () => {
    const openapi = (await t.http.get('/openapi.json')).body as { info: { description: string } };
    // relative links: they reach the service from Swagger UI (/docs) and the repository's folders from docs/api.md
    expect(openapi.info.description).toContain('`/asyncapi.json`: [read it in the console](../console/#stream-api)');
    expect(openapi.info.description).toContain('[console](../console/)');
  });
});

describe('AsyncAPI document with SVC_DOCS=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ env: { SVC_DOCS: 'false' } });
  });
  afterAll(async () => {
    await t.close();
    delete process.env.SVC_DOCS;
  });

  it('is not served (404 in the error shape), like the OpenAPI document; the console still is', async () => {
    const res = await t.http.get('/asyncapi.json');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ type: 'not_found_error' });
    expect((await t.http.get('/console/')).status).toBe(200);
  });
});
