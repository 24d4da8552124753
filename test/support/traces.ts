import { randomBytes } from 'node:crypto';
import type { ReceivedSpan } from '../fakes/otlp-receiver';

/** The OTEL_* variables the trace suites set (and delete after). */
export const OTEL_VARIABLES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_BSP_SCHEDULE_DELAY'];

/** A W3C traceparent a client sends: its own trace and span. */
export const clientTraceparent = (): { header: string; traceId: string; spanId: string } => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
};

/** Every string an export carried: span, event and resource attribute values, names. */
export const exportedStrings = (spans: ReceivedSpan[]): string[] =>
  spans
    .flatMap((s) => [
      s.name,
      ...Object.values(s.attributes),
      ...Object.values(s.resource),
      ...s.events.flatMap((e) => [e.name, ...Object.values(e.attributes)]),
    ])
    .map(String);
