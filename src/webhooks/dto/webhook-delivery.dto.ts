import { ApiProperty } from '@nestjs/swagger';
import { WEBHOOK_EVENT_TYPES } from '../signature';
import type { WebhookEventType } from '../signature';

/** One attempt at delivering an event to an endpoint. */
export class WebhookDeliveryDto {
  /** Identifier of the attempt, `whd_…`. */
  id!: string;
  object!: 'webhook_delivery';
  /** The event delivered, `evt_…` (the body's `id`). */
  event_id!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES })
  event!: WebhookEventType;
  /** 1 for the first attempt of this event. */
  attempt!: number;
  /** The receiver's status; null when no response came. */
  status_code!: number | null;
  latency_ms!: number | null;
  /** Why the attempt failed; null on success. */
  error!: string | null;
  /** Unix time in seconds. */
  created_at!: number;
}

export class WebhookDeliveryListDto {
  object!: 'list';
  data!: WebhookDeliveryDto[];
  has_more!: boolean;
  first_id!: string | null;
  last_id!: string | null;
}
