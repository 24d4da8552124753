import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { startApp, TestApp } from './support/app';

/** OpenAI's model listing over the key's chain, through the official SDK (decisions §10). */
describe('models through the openai SDK', () => {
  let t: TestApp;
  let client: OpenAI;

  beforeAll(async () => {
    t = await startApp();
    const key = await t.createKey('models', [
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
      { provider: 'echo', model: 'echo-2' },
      // a second step of a model already listed: listed once, owned by its entry step's provider
      { provider: 'echo', model: 'echo-1' },
    ]);
    client = new OpenAI({ apiKey: key.secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => t.close());

  it('models.list() lists each model of the chain once, in chain order, owned by its entry step', async () => {
    const ids: Array<{ id: string; owned_by: string; object: string }> = [];
    for await (const model of client.models.list())
      ids.push({ id: model.id, owned_by: model.owned_by, object: model.object });
    expect(ids).toEqual([
      { id: 'echo-1', owned_by: 'echo', object: 'model' },
      { id: 'speech-02-hd', owned_by: 'espeak', object: 'model' },
      { id: 'echo-2', owned_by: 'echo', object: 'model' },
    ]);
  });

  it('models.retrieve() reads one, and a model outside the chain is 404 model_not_found', async () => {
    expect(await client.models.retrieve('speech-02-hd')).toMatchObject({
      id: 'speech-02-hd',
      object: 'model',
      owned_by: 'espeak',
      created: 0,
    });
    const err = await client.models.retrieve('gpt-4o').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ status: 404, code: 'model_not_found', type: 'not_found_error', param: 'model' });
  });

  it('model_not_supported names the models of that capability the key can use', async () => {
    const err = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ code: 'model_not_supported', param: 'model' });
    expect((err as BadRequestError).message).toContain('Its chat models: echo-1, echo-2.');
    expect((err as BadRequestError).message).toContain('GET /v1/models');
  });

  it('needs a key', async () => {
    expect((await t.http.get('/v1/models')).status).toBe(401);
  });
});
