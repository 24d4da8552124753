import type { WebhookEventType } from './signature';

/** A stored gateway event as fan-out reads it. */
export interface SourceEvent {
  id: string;
  type: WebhookEventType;
  keyId: string | null;
  provider: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** The receiving key: its id and the chain steps that name a provider and its model. */
export interface ReceivingKey {
  id: string;
  chain: ReadonlyArray<{ provider: string; model: string }>;
}

/** `data` of a webhook event (decisions §8), in its documented order. */
export interface DeliveryData {
  proxy_key: string;
  model: string | null;
  exhausted_provider: string | null;
  active_provider: string;
  fallback_level: number | null;
  latency_ms: number | null;
  request_id: string | null;
  /** A failover that continued a stream broken after its first byte (decisions §3); absent otherwise. */
  mid_stream?: true;
  /** Closing event of a coalescing window only: how many failovers after the window's first it stands for. */
  coalesced_count?: number;
  /** Closing event only: the window's length in seconds. */
  window_secs?: number;
}

export interface DeliveryPayload {
  id: string;
  event: WebhookEventType;
  timestamp: string;
  data: DeliveryData;
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const int = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? Math.round(value) : null;

/**
 * The body one key receives for one event, serialised once: every attempt sends these exact bytes.
 * A recovery names the receiving key and that key's model on the recovered provider (its first step there).
 */
export function deliveryBody(event: SourceEvent, receiver: ReceivingKey): string {
  const d = event.data;
  const recovered = event.type === 'provider_recovered';
  const model = recovered
    ? (receiver.chain.find((step) => step.provider === event.provider)?.model ?? null)
    : str(d.model);
  const payload: DeliveryPayload = {
    id: event.id,
    event: event.type,
    timestamp: event.createdAt.toISOString(),
    data: {
      proxy_key: receiver.id,
      model,
      exhausted_provider: str(d.exhausted_provider),
      active_provider: str(d.active_provider) ?? event.provider,
      fallback_level: int(d.fallback_level),
      latency_ms: int(d.latency_ms),
      request_id: str(d.request_id),
    },
  };
  if (d.mid_stream === true) payload.data.mid_stream = true;
  const coalesced = int(d.coalesced_count);
  if (coalesced !== null) {
    payload.data.coalesced_count = coalesced;
    payload.data.window_secs = int(d.window_secs) ?? 0;
  }
  return JSON.stringify(payload);
}
