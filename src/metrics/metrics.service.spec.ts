import { EventEmitter } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import { startTime } from 'pino-http';
import { MetricsService } from './metrics.service';

/** An Express-like request/response pair that closes when told to. */
function exchange(
  method: string,
  route: { path: string } | undefined,
  status: number,
  provider?: string,
  arrivedAt?: number,
): { req: Request; res: Response } {
  const req = { method, route } as unknown as Request;
  const res = Object.assign(new EventEmitter(), {
    req,
    statusCode: status,
    getHeader: (name: string) => (name === 'x-svc-provider-used' ? provider : undefined),
    [startTime]: arrivedAt,
  }) as unknown as Response;
  return { req, res };
}

function serve(metrics: MetricsService, req: Request, res: Response): void {
  const next: NextFunction = () => undefined;
  metrics.httpMiddleware(req, res, next);
  res.emit('close');
}

const line = (text: string, series: string): string | undefined =>
  text.split('\n').find((l) => l.startsWith(`${series} `));

describe('MetricsService', () => {
  it('counts responses by method, route template, status and serving provider', async () => {
    const metrics = new MetricsService();
    const chat = { path: '/v1/chat/completions' };
    for (let i = 0; i < 3; i++) {
      const { req, res } = exchange('POST', chat, 200, 'openai');
      serve(metrics, req, res);
    }
    const failed = exchange('POST', chat, 502);
    serve(metrics, failed.req, failed.res);
    const unknown = exchange('BREW', undefined, 404);
    serve(metrics, unknown.req, unknown.res);
    // a logging middleware's catch-all route is what an unknown path ends with
    const catchAll = exchange('GET', { path: '/{*path}' }, 404);
    serve(metrics, catchAll.req, catchAll.res);

    const text = await metrics.render();

    expect(
      line(text, 'svc_http_requests_total{method="POST",route="/v1/chat/completions",status="200",provider="openai"}'),
    ).toMatch(/ 3$/);
    expect(
      line(text, 'svc_http_requests_total{method="POST",route="/v1/chat/completions",status="502",provider="none"}'),
    ).toMatch(/ 1$/);
    expect(
      line(text, 'svc_http_requests_total{method="OTHER",route="unmatched",status="404",provider="none"}'),
    ).toMatch(/ 1$/);
    expect(line(text, 'svc_http_requests_total{method="GET",route="unmatched",status="404",provider="none"}')).toMatch(
      / 1$/,
    );
    expect(text).not.toContain('{*path}');
  });

  it('times responses by method and route from their arrival to their close, as a histogram', async () => {
    const metrics = new MetricsService();
    const chat = { path: '/v1/chat/completions' };
    const slow = exchange('POST', chat, 200, 'openai', Date.now() - 300);
    serve(metrics, slow.req, slow.res);
    const fast = exchange('POST', chat, 502, undefined, Date.now());
    serve(metrics, fast.req, fast.res);

    const text = await metrics.render();

    expect(text).toContain('# TYPE svc_http_request_duration_seconds histogram');
    const series = 'method="POST",route="/v1/chat/completions"';
    expect(line(text, `svc_http_request_duration_seconds_bucket{${series},le="0.005"}`)).toMatch(/ 1$/);
    expect(line(text, `svc_http_request_duration_seconds_bucket{${series},le="0.25"}`)).toMatch(/ 1$/);
    expect(line(text, `svc_http_request_duration_seconds_bucket{${series},le="0.5"}`)).toMatch(/ 2$/);
    expect(line(text, `svc_http_request_duration_seconds_bucket{${series},le="+Inf"}`)).toMatch(/ 2$/);
    expect(line(text, `svc_http_request_duration_seconds_count{${series}}`)).toMatch(/ 2$/);
    const sum = Number(line(text, `svc_http_request_duration_seconds_sum{${series}}`)?.split(' ')[1]);
    expect(sum).toBeGreaterThanOrEqual(0.3);
    expect(sum).toBeLessThan(0.5);
  });

  it('keeps counting across scrapes (a counter never goes back)', async () => {
    const metrics = new MetricsService();
    const route = { path: '/healthz' };
    const first = exchange('GET', route, 200);
    serve(metrics, first.req, first.res);
    await metrics.render();
    const second = exchange('GET', route, 200);
    serve(metrics, second.req, second.res);

    expect(
      line(
        await metrics.render(),
        'svc_http_requests_total{method="GET",route="/healthz",status="200",provider="none"}',
      ),
    ).toMatch(/ 2$/);
  });

  it('records upstream latency, failovers, deliveries, sessions and task runs', async () => {
    const metrics = new MetricsService();
    metrics.upstreamAttempt('openai', false, 120);
    metrics.upstreamAttempt('anthropic', true, 40);
    metrics.failover('openai', 'anthropic');
    metrics.webhookAttempt('succeeded');
    metrics.webhookAttempt('pending');
    metrics.sessionOpened();
    metrics.sessionOpened();
    metrics.sessionClosed();
    metrics.taskRun('completed', 2500);

    const text = await metrics.render();

    expect(line(text, 'svc_upstream_request_duration_seconds_count{provider="openai",outcome="error"}')).toMatch(/ 1$/);
    expect(
      line(text, 'svc_upstream_request_duration_seconds_bucket{le="0.05",provider="anthropic",outcome="ok"}'),
    ).toMatch(/ 1$/);
    expect(
      line(text, 'svc_upstream_request_duration_seconds_bucket{le="0.1",provider="openai",outcome="error"}'),
    ).toMatch(/ 0$/);
    expect(line(text, 'svc_failovers_total{from="openai",to="anthropic"}')).toMatch(/ 1$/);
    expect(line(text, 'svc_webhook_deliveries_total{outcome="delivered"}')).toMatch(/ 1$/);
    expect(line(text, 'svc_webhook_deliveries_total{outcome="retry_scheduled"}')).toMatch(/ 1$/);
    expect(line(text, 'svc_webhook_deliveries_total{outcome="failed"}')).toMatch(/ 0$/);
    expect(line(text, 'svc_ws_sessions_open')).toMatch(/ 1$/);
    expect(line(text, 'svc_speech_task_duration_seconds_sum{outcome="completed"}')).toMatch(/ 2\.5$/);
  });
});
