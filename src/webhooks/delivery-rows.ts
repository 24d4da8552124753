import type { WebhookEventType } from './signature';
import type { WebhookAttemptEntity } from './webhook-delivery.entity';

/** The rows the deliveries repository reads and writes, as its callers and its SQL see them. */

export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  /** The key that owns the endpoint: lanes are shared across keys. */
  keyId: string;
  eventId: string;
  event: WebhookEventType;
  payload: string;
  attempts: number;
  url: string;
  secret: string;
  enabled: boolean;
  /** The W3C traceparent of the request that caused the event (the attempt's span links to it); null while traces are off. */
  traceparent: string | null;
}

export type AttemptRecord = Pick<
  WebhookAttemptEntity,
  | 'deliveryId'
  | 'endpointId'
  | 'eventId'
  | 'event'
  | 'attempt'
  | 'statusCode'
  | 'latencyMs'
  | 'error'
  | 'responseSnippet'
>;

export interface EventRow {
  id: string;
  type: string;
  key_id: string | null;
  provider: string;
  data: Record<string, unknown>;
  created_at: Date;
  txid: string;
  traceparent: string | null;
}

export interface TargetRow {
  id: string;
  key_id: string;
  chain: Array<{ provider: string; model: string }> | null;
}

/** TypeORM answers UPDATE/DELETE with `[rows, count]` and everything else with the rows. */
export const rowsOf = <T>(result: unknown): T[] =>
  Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number'
    ? (result[0] as T[])
    : (result as T[]);
