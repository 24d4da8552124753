import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
    const generated = execFileSync(process.execPath, [join(root, 'dist/src/bin/write-openapi.js'), '--stdout'], { encoding: 'utf8' });
    expect(generated).toBe(readFileSync(join(root, 'openapi/openapi.json'), 'utf8'));
  });

  it('is served at /openapi.json with every route, the bearer schemes and the error body', async () => {
    const res = await t.http.get('/openapi.json');
    expect(res.status).toBe(200);
    const paths = Object.keys(res.body.paths);
    expect(paths).toEqual(expect.arrayContaining(['/v1/audio/voice_consents', '/v1/audio/voice_consents/{consent_id}', '/v1/audio/voice_consents/{consent_id}/content', '/v1/admin/keys', '/v1/admin/keys/{key_id}']));
    expect(res.body.components.securitySchemes).toMatchObject({ 'proxy-key': { scheme: 'bearer' }, admin: { scheme: 'bearer' } });
    const create = res.body.paths['/v1/audio/voice_consents'].post;
    expect(Object.keys(create.requestBody.content)).toEqual(['multipart/form-data']);
    expect(create.responses['415'].content['application/json'].schema.$ref).toBe('#/components/schemas/ErrorResponseDto');
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
