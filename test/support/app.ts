import type { Provider, Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { AddressInfo } from 'node:net';
import { AppModule } from '../../src/app.module';
import { APP_OPTIONS, setupApp } from '../../src/app.setup';
import { GatewayConfig, parseGatewayConfig } from '../../src/config/gateway-config';
import { AdapterRegistry } from '../../src/providers/adapter-registry';
import type { ChainStepDto } from '../../src/config/chain-step.dto';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

/** Providers every test app knows unless a test brings its own. */
export const TEST_GATEWAY_YAML = `
providers:
  - name: echo
    kind: echo
  - name: espeak
    kind: espeak
`;

export interface TestApp {
  app: NestExpressApplication;
  /** Base URL of the listening server. */
  url: string;
  http: ReturnType<typeof request>;
  /** Creates a proxy key through the admin API and returns its id and secret. */
  createKey(name?: string, chain?: ChainStepDto[]): Promise<{ id: string; secret: string }>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  gateway?: GatewayConfig;
  /** More providers for the root module (e.g. an APP_INTERCEPTOR a test adds to the pipeline). */
  providers?: Provider[];
  /** More modules beside AppModule (e.g. one whose `configure(consumer)` adds a middleware). */
  imports?: Array<Type<unknown>>;
  /** Runs after setupApp, before the app listens (e.g. an `app.use()` a test adds). */
  afterSetup?: (app: NestExpressApplication) => void;
}

/** Boots the real AppModule on a random port against the run's database. */
export async function startApp(options: TestAppOptions = {}): Promise<TestApp> {
  const env: Record<string, string | undefined> = {
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SVC_SYNC_INTERVAL_MS: '200',
    ...options.env,
  };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule, ...(options.imports ?? [])],
    providers: options.providers ?? [],
  })
    .overrideProvider(GatewayConfig)
    .useValue(options.gateway ?? parseGatewayConfig(TEST_GATEWAY_YAML, 'test gateway'))
    .compile();
  const app = setupApp(moduleRef.createNestApplication<NestExpressApplication>(APP_OPTIONS));
  options.afterSetup?.(app);
  try {
    await app.listen(0, '127.0.0.1');
    // the offline engine loads in the background; finish that inside the test file, not after it
    await Promise.all(
      app
        .get(AdapterRegistry)
        .all()
        .filter((adapter) => adapter.kind === 'espeak')
        .map((adapter) => adapter.probe(AbortSignal.timeout(60000))),
    );
  } catch (err) {
    // a half-started app would keep its pools open and the test process alive
    await app.close().catch(() => undefined);
    throw err;
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const http = request(url);
  return {
    app,
    url,
    http,
    async createKey(name = 'test key', chain = [{ provider: 'echo', model: 'echo-1' }]) {
      const res = await http.post('/v1/admin/keys').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name, chain });
      if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.id as string, secret: res.body.secret as string };
    },
    close: () => app.close(),
  };
}
