import { ApiProperty } from '@nestjs/swagger';
import { WEBHOOK_EVENT_TYPES } from '../signature';
import type { WebhookEventType } from '../signature';

/** One attempt at delivering an event to an endpoint. */
export class WebhookDeliveryDto {
  /** Identifier of the attempt, `whd_…`. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['webhook_delivery'] })
  object!: 'webhook_delivery';
  /** The event delivered, `evt_…` (the body's `id`). */
  event_id!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES })
  event!: WebhookEventType;
  /** 1 for the first attempt of this event. */
  @ApiProperty({ type: 'integer' })
  attempt!: number;
  /** The receiver's status; null when no response came. */
  @ApiProperty({ type: 'integer', nullable: true })
  status_code!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  latency_ms!: number | null;
  /** Why the attempt failed; null on success. */
  error!: string | null;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
}

export class WebhookDeliveryListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: WebhookDeliveryDto[];
  has_more!: boolean;
  first_id!: string | null;
  last_id!: string | null;
}
