import { DataSource } from 'typeorm';
import { parseGatewayConfig, type GatewayConfig } from '../../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from '../fakes/fake-openai';
import { startApp, TestApp } from './app';
import { CHAT_PATH, chatBody } from './failover';
import { isolatedDatabase, ReceivedCall, Receiver } from './receiver';

/** Short enough for a test to see a window close, long enough for 50 requests on a busy machine. */
export const WINDOW_SECS = 5;
const PATH = '/v1/user/webhooks';

type Delivered = { id: string; event: string; data: Record<string, unknown> };
export const bodyOf = (call: ReceivedCall): Delivered => JSON.parse(call.raw.toString('utf8')) as Delivered;

export interface Coalescing {
  db: { url: string; drop(): Promise<void> };
  receiver: Receiver;
  /** Coalesces in windows of WINDOW_SECS. */
  t: TestApp;
  /** SVC_FAILOVER_EVENT_WINDOW=0: one event per request. */
  perRequest: TestApp;
  /** By label: fake OpenAI providers `co-<label>`, all answering 500. */
  fakes: Record<string, FakeOpenAi>;
  gateway: () => GatewayConfig;
  env: (window: number) => Record<string, string>;
  subscribe: (app: TestApp, secret: string, path: string) => Promise<void>;
  chat: (app: TestApp, secret: string, model?: string) => Promise<string>;
  eventRows: (keyId: string) => Promise<Array<{ data: Record<string, unknown> }>>;
}

/**
 * Starts, around the calling describe, an isolated database, a webhook receiver, a failing fake per label and two
 * apps over them (`t` coalescing, `perRequest` not); returns them, filled in beforeAll, with the helpers of the
 * coalescing specs.
 */
export function useCoalescing(database: string, labels: string[]): Coalescing {
  const s = { fakes: {} } as Coalescing;
  s.gateway = () =>
    parseGatewayConfig(
      [
        'providers:',
        '  - name: echo',
        '    kind: echo',
        ...Object.values(s.fakes).map(
          (f) => `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x`,
        ),
      ].join('\n'),
      'coalescing gateway',
    );
  s.env = (window: number) => ({
    DATABASE_URL: s.db.url,
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    SVC_FAILOVER_EVENT_WINDOW: String(window),
    // a circuit once open stays open for the whole file
    SVC_BREAKER_COOLDOWN_MS: '600000',
  });

  beforeAll(async () => {
    s.db = await isolatedDatabase(database);
    for (const label of labels) s.fakes[label] = await startFakeOpenAi({ name: `co-${label}`, mode: 'error500' });
    s.receiver = await Receiver.start();
    s.t = await startApp({ gateway: s.gateway(), env: s.env(WINDOW_SECS) });
    s.perRequest = await startApp({ gateway: s.gateway(), env: s.env(0) });
  });
  afterAll(async () => {
    await s.perRequest?.close();
    await s.t?.close();
    await s.receiver?.close();
    await Promise.all(Object.values(s.fakes).map((f) => f.close()));
    await s.db?.drop();
  });

  s.subscribe = async (app, secret, path) => {
    const res = await app.http
      .post(PATH)
      .set('Authorization', `Bearer ${secret}`)
      .send({ url: s.receiver.url(path) });
    expect(res.status).toBe(201);
  };
  s.chat = async (app, secret, model = 'm-a') => {
    const res = await app.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody(model));
    expect(res.status).toBe(200);
    expect(res.headers['x-svc-is-fallback']).toBe('true');
    return res.headers['x-svc-request-id'];
  };
  s.eventRows = (keyId) =>
    s.t.app
      .get(DataSource)
      .query<
        Array<{ data: Record<string, unknown> }>
      >(`SELECT data FROM gateway_events WHERE key_id = $1 ORDER BY created_at, txid`, [keyId]);
  return s;
}
