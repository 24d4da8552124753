import { createHmac } from 'node:crypto';

export type WebhookEventType = 'failover' | 'provider_recovered';
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['failover', 'provider_recovered'];

/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>` (decisions §8); the key is the whole `whsec_…` string. */
export function signDelivery(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The headers of one attempt: a fresh timestamp and signature each time, over the same body bytes. */
export function deliveryHeaders(
  secret: string,
  event: WebhookEventType,
  body: string,
  nowMs: number,
): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'svc-gateway-webhooks/1',
    'x-svc-event': event,
    'x-svc-timestamp': String(timestamp),
    'x-svc-signature': signDelivery(secret, timestamp, body),
  };
}
