import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import { tracing } from '../tracing/tracing';
import type { ClaimedDelivery } from './deliveries.repository';
import type { DeliveryStatus } from './webhook-delivery.entity';
import type { AttemptResult } from './webhook-sender';

/** Where the endpoint is, and nothing more: its path or query may hold the receiver's own token. */
function destination(url: string): { host?: string; port?: number } {
  try {
    const parsed = new URL(url);
    return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : undefined };
  } catch {
    return {};
  }
}

/**
 * One delivery attempt's span (decisions §12): a CONSUMER span of a trace of its own, linked to the request that
 * caused the event (the `traceparent` stored with it). Ids, the event type, the endpoint's host, the HTTP status and
 * the error's type only: never the endpoint's secret, its path, the payload or the receiver's answer.
 */
export class DeliveryTrace {
  private readonly span: Span;
  private ended = false;

  /** Call only while traces are on. */
  constructor(delivery: ClaimedDelivery, attempt: number) {
    const { host, port } = destination(delivery.url);
    this.span = tracing.linkedSpan(`webhook ${delivery.event}`, SpanKind.CONSUMER, delivery.traceparent, {
      'svc.webhook.event': delivery.event,
      'svc.webhook.event_id': delivery.eventId,
      'svc.webhook.delivery_id': delivery.id,
      'svc.webhook.endpoint_id': delivery.endpointId,
      'svc.webhook.attempt': attempt,
      'svc.proxy_key': delivery.keyId,
      [ATTR_HTTP_REQUEST_METHOD]: 'POST',
      ...(host !== undefined && { [ATTR_SERVER_ADDRESS]: host }),
      ...(port !== undefined && { [ATTR_SERVER_PORT]: port }),
    });
  }

  /** The attempt was made and recorded: its answer, and what became of the delivery (`pending`: retried later). */
  attempted(result: AttemptResult, status: DeliveryStatus): void {
    if (result.statusCode !== null) this.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, result.statusCode);
    this.span.setAttribute('svc.webhook.outcome', status);
    if (!result.delivered) this.failed(result.errorType ?? 'error');
  }

  /** The attempt did not count (shutdown cut it, or its claim was lost). */
  failed(type: string): void {
    if (this.ended) return;
    this.span.setAttribute(ATTR_ERROR_TYPE, type);
    this.span.setStatus({ code: SpanStatusCode.ERROR });
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end();
  }
}
