import {
  CallHandler,
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  MiddlewareConsumer,
  Module,
  NestInterceptor,
  NestModule,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { ChatFastPath } from '../src/chat/chat-fast-path';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { startFakeOpenAi, type FakeOpenAi } from './fakes/fake-openai';
import { startApp, type TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';

/** A query string sends the same request through Express and Nest's pipeline instead of the fast path. */
const VIA_NEST = `${CHAT_PATH}?via=nest`;

/** A global interceptor someone adds to the application: it stamps every answer. */
@Injectable()
class StampInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    context.switchToHttp().getResponse<Response>().setHeader('x-test-stamp', 'stamped');
    return next.handle();
  }
}

/** A global guard someone adds: it refuses requests that carry `x-test-block`. */
@Injectable()
class BlockGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (req.headers['x-test-block']) throw new ForbiddenException('blocked by the test guard');
    return true;
  }
}

/** A middleware someone mounts, by `app.use()` or a module's `configure(consumer)`: it stamps every answer with `header`. */
const stamping =
  (header: string) =>
  (_req: Request, res: Response, next: NextFunction): void => {
    res.setHeader(header, 'ran');
    next();
  };

/** A module whose middleware applies to every route. */
@Module({})
class StampingModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(stamping('x-test-module-middleware')).forRoutes('*');
  }
}

const X_SVC = ['x-svc-provider-used', 'x-svc-is-fallback', 'x-svc-fallback-level'];

/**
 * The fast path and the Nest pipeline are one pipeline: the same answers and x-svc headers on a failover,
 * the same usage records, and an enhancer added to the application is never skipped.
 */
describe('chat pipeline: fast path and Nest route', () => {
  let failing: FakeOpenAi;
  const gateway = () =>
    parseGatewayConfig(
      `providers:\n  - name: echo\n    kind: echo\n  - name: down\n    kind: openai\n    base_url: ${failing.url}\n    api_key: x\n`,
      'pipeline gateway',
    );

  beforeAll(async () => {
    failing = await startFakeOpenAi({ name: 'down', mode: 'error500' });
  });
  afterAll(async () => {
    await failing?.close();
  });

  describe('as configured', () => {
    let t: TestApp;
    let handled: jest.SpyInstance;
    beforeAll(async () => {
      t = await startApp({ gateway: gateway(), env: { SVC_FAILOVER_EVENT_WINDOW: '0' } });
      handled = jest.spyOn(t.app.get(ChatFastPath), 'handle');
    });
    afterAll(() => t?.close());

    it('answers a failover alike on both ways, x-svc headers and usage record included', async () => {
      const key = await t.createKey('parity', [
        { provider: 'down', model: 'm-a' },
        { provider: 'echo', model: 'echo-1' },
      ]);
      const ask = (path: string) =>
        t.http.post(path).set('Authorization', `Bearer ${key.secret}`).send(chatBody('m-a'));
      handled.mockClear();
      const fast = await ask(CHAT_PATH);
      // the declared request pipeline is the one the fast path replays: it takes a plain chat request
      expect(t.app.get(ChatFastPath).replaysPipeline()).toBe(true);
      expect(handled).toHaveBeenCalledTimes(1);
      const nest = await ask(VIA_NEST);
      expect(handled).toHaveBeenCalledTimes(1);

      for (const answer of [fast, nest]) {
        expect(answer.status).toBe(200);
        expect(answer.headers['x-svc-provider-used']).toBe('echo');
        expect(answer.headers['x-svc-is-fallback']).toBe('true');
      }
      for (const name of X_SVC) expect(nest.headers[name]).toBe(fast.headers[name]);
      expect(JSON.parse(nest.headers['x-svc-fallback-alert'])).toEqual(
        JSON.parse(fast.headers['x-svc-fallback-alert']),
      );
      expect(Object.keys(nest.body as object).sort()).toEqual(Object.keys(fast.body as object).sort());

      const record = async (requestId: string) =>
        (
          await eventually(
            () => t.http.get(`/v1/usage?request_id=${requestId}`).set('Authorization', `Bearer ${key.secret}`),
            (res) => (res.body as { data: unknown[] }).data.length === 1,
            5000,
            `the usage record of ${requestId}`,
          )
        ).body.data[0] as Record<string, unknown>;
      const [fastRecord, nestRecord] = await Promise.all([
        record(fast.headers['x-svc-request-id']),
        record(nest.headers['x-svc-request-id']),
      ]);
      const comparable = (r: Record<string, unknown>) => ({
        status: r.status,
        provider: r.provider,
        fallback_level: r.fallback_level,
        attempts: (r.attempts as Array<Record<string, unknown>>).map((a) => [a.provider, a.outcome]),
      });
      expect(comparable(nestRecord)).toEqual(comparable(fastRecord));
      expect(comparable(fastRecord)).toEqual({
        status: 200,
        provider: 'echo',
        fallback_level: 1,
        // the 500 is tried once more on its step (decisions §3), on both ways alike
        attempts: [
          ['down', 'HTTP 500'],
          ['down', 'HTTP 500'],
          ['echo', 'ok'],
        ],
      });
    });
  });

  describe('with a global interceptor and a global guard added', () => {
    let t: TestApp;
    let handled: jest.SpyInstance;
    beforeAll(async () => {
      t = await startApp({
        gateway: gateway(),
        providers: [
          { provide: APP_INTERCEPTOR, useClass: StampInterceptor },
          { provide: APP_GUARD, useClass: BlockGuard },
        ],
      });
      handled = jest.spyOn(t.app.get(ChatFastPath), 'handle');
    });
    afterAll(() => t?.close());

    it('runs them on a plain chat request (the fast path steps aside for a pipeline it does not replay)', async () => {
      const key = await t.createKey('enhanced');
      const ok = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('echo-1'));
      expect(ok.status).toBe(200);
      expect(ok.headers['x-test-stamp']).toBe('stamped');
      expect(ok.headers['x-svc-provider-used']).toBe('echo');

      const blocked = await t.http
        .post(CHAT_PATH)
        .set('Authorization', `Bearer ${key.secret}`)
        .set('x-test-block', '1')
        .send(chatBody('echo-1'));
      expect(blocked.status).toBe(403);
      expect(handled).not.toHaveBeenCalled();
      expect(t.app.get(ChatFastPath).replaysPipeline()).toBe(false);
    });
  });

  describe.each([
    {
      how: 'an app.use() middleware',
      header: 'x-test-app-use',
      options: { afterSetup: (app: TestApp['app']) => void app.use(stamping('x-test-app-use')) },
    },
    { how: "a module's middleware", header: 'x-test-module-middleware', options: { imports: [StampingModule] } },
  ])('with $how added', ({ header, options }) => {
    let t: TestApp;
    let handled: jest.SpyInstance;
    beforeAll(async () => {
      t = await startApp({ gateway: gateway(), ...options });
      handled = jest.spyOn(t.app.get(ChatFastPath), 'handle');
    });
    afterAll(() => t?.close());

    it('runs it on a plain chat request (the fast path stands aside)', async () => {
      const key = await t.createKey('middleware');
      const ok = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key.secret}`).send(chatBody('echo-1'));
      expect(ok.status).toBe(200);
      expect(ok.headers[header]).toBe('ran');
      expect(ok.headers['x-svc-provider-used']).toBe('echo');
      expect(handled).not.toHaveBeenCalled();
      expect(t.app.get(ChatFastPath).replaysPipeline()).toBe(false);
    });
  });
});
