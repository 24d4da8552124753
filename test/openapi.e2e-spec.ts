import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, ErrorCode } from '../src/common/errors/error-codes';
import { projectRoot } from '../src/common/paths';
import { startApp, TestApp } from './support/app';

describe('OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  // the document comes from the build (the swagger CLI plugin runs in `nest build`; npm test builds first)
  it('matches the committed openapi/openapi.json (run `npm run openapi` after changing a route or DTO)', () => {
    const root = projectRoot();
    const generated = execFileSync(process.execPath, [join(root, 'dist/src/bin/write-openapi.js'), '--stdout'], {
      encoding: 'utf8',
    });
    expect(generated).toBe(readFileSync(join(root, 'openapi/openapi.json'), 'utf8'));
  });

  it('is served at /openapi.json with every route, the bearer schemes and the error body', async () => {
    const res = await t.http.get('/openapi.json');
    expect(res.status).toBe(200);
    const paths = Object.keys(res.body.paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/v1/audio/voice_consents',
        '/v1/audio/voice_consents/{consent_id}',
        '/v1/audio/voice_consents/{consent_id}/content',
        '/v1/admin/keys',
        '/v1/admin/keys/{key_id}',
      ]),
    );
    expect(res.body.components.securitySchemes).toMatchObject({
      'proxy-key': { scheme: 'bearer' },
      admin: { scheme: 'bearer' },
    });
    const create = res.body.paths['/v1/audio/voice_consents'].post;
    expect(Object.keys(create.requestBody.content)).toEqual(['multipart/form-data']);
    expect(create.responses['415'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorResponse');
  });

  it('declares every tag with a description, chat and speech first and admin and operations last', async () => {
    const doc = (await t.http.get('/openapi.json')).body as {
      tags: Array<{ name: string; description?: string }>;
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const names = doc.tags.map((tag) => tag.name);
    // Swagger UI shows its groups in this order
    expect(names.slice(0, 2)).toEqual(['chat', 'speech']);
    expect(names.slice(-2)).toEqual(['admin', 'operations']);
    for (const tag of doc.tags) expect(tag.description?.length ?? 0).toBeGreaterThan(20);
    const used = new Set(
      Object.values(doc.paths).flatMap((operations) => Object.values(operations).flatMap((o) => o.tags ?? [])),
    );
    expect([...used].filter((name) => !names.includes(name))).toEqual([]);
    expect(names.filter((name) => !used.has(name))).toEqual([]);
  });

  it('names schemas as a client sees them (no Dto suffix) and every $ref resolves', async () => {
    const doc = (await t.http.get('/openapi.json')).body as { components: { schemas: Record<string, unknown> } };
    const names = Object.keys(doc.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['ErrorResponse', 'VoiceConsent']));
    expect(names.filter((name) => name.endsWith('Dto'))).toEqual([]);
    const refs = [...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([A-Za-z0-9_]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(names).toContain(ref);
  });

  it('gives each error status examples whose type and status match the error code table', async () => {
    const doc = (await t.http.get('/openapi.json')).body as {
      paths: Record<
        string,
        Record<
          string,
          {
            responses: Record<
              string,
              {
                content?: Record<
                  string,
                  { examples?: Record<string, { value: { error: { type: string; code: ErrorCode } } }> }
                >;
              }
            >;
          }
        >
      >;
    };
    const seen = new Set<string>();
    for (const item of Object.values(doc.paths)) {
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          if (Number(status) < 400) continue;
          const examples = response.content?.['application/json']?.examples ?? {};
          for (const example of Object.values(examples)) {
            const { type, code } = example.value.error;
            expect({ status: ERROR_CODES[code].status, type: ERROR_CODES[code].type }).toEqual({
              status: Number(status),
              type,
            });
            seen.add(`${status} ${code}`);
          }
        }
      }
    }
    // a 401 no longer shows an invalid_request_error: it shows the authentication errors
    expect([...seen]).toEqual(
      expect.arrayContaining([
        '401 missing_api_key',
        '401 invalid_api_key',
        '404 resource_not_found',
        '413 text_too_long',
        '429 rate_limited',
        '502 all_providers_failed',
        '503 no_provider_available',
      ]),
    );
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await t.http.get('/docs/').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });
});

describe('SVC_DOCS=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ env: { SVC_DOCS: 'false' } });
  });
  afterAll(async () => {
    await t.close();
    delete process.env.SVC_DOCS;
  });

  it('turns off Swagger UI and the OpenAPI document (404 in the error shape), and the API still answers', async () => {
    for (const path of ['/docs/', '/openapi.json']) {
      const res = await t.http.get(path);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ type: 'not_found_error' });
    }
    expect((await t.http.get('/healthz')).status).toBe(200);
  });
});
