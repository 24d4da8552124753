import { startApp, TestApp } from './support/app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('answers an unknown route with the error body and a request id', async () => {
    const key = await t.createKey();
    const res = await t.http.get('/v1/nope').set('Authorization', `Bearer ${key.secret}`);
    expect(res.status).toBe(404);
    expect(res.headers['x-svc-request-id']).toMatch(/^req_[0-9A-Za-z]{20}$/);
    expect(res.body).toEqual({
      error: { message: expect.any(String), type: 'not_found_error', param: null, code: 'route_not_found' },
    });
  });
});
