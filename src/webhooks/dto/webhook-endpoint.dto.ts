import { ApiProperty } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsString,
  ValidateBy,
  ValidateIf,
  ValidationOptions,
} from 'class-validator';
import { WEBHOOK_EVENT_TYPES } from '../signature';
import type { WebhookEventType } from '../signature';
import { webhookUrlProblem } from '../webhook-url';

/** An absolute http(s) URL without credentials (its addresses are checked when it is called). */
const IsWebhookUrl = (options?: ValidationOptions): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isWebhookUrl',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && webhookUrlProblem(value) === null,
        defaultMessage: (args) =>
          `url ${typeof args?.value === 'string' ? webhookUrlProblem(args.value) : 'must be a string'}`,
      },
    },
    options,
  );

/** Present → validated; absent → left alone. `null` is refused rather than read as "absent". */
const IfPresent = (): PropertyDecorator => ValidateIf((_: object, value: unknown) => value !== undefined);

const EVENTS_DOC = { enum: WEBHOOK_EVENT_TYPES, isArray: true, example: ['failover', 'provider_recovered'] } as const;

export class CreateWebhookEndpointDto {
  /** Address that receives deliveries: an absolute `http://` or `https://` URL. */
  @IsString()
  @IsWebhookUrl()
  url!: string;

  /**
   * Events to receive, each once; default `["failover"]`. Failover events are coalesced per key, requested model,
   * exhausted and serving provider: the first in `SVC_FAILOVER_EVENT_WINDOW` (default 60 s) is delivered at once with
   * its request id, the rest in one closing event whose `data` adds `coalesced_count` and `window_secs`.
   */
  @ApiProperty({ ...EVENTS_DOC, required: false, default: ['failover'] })
  @IfPresent()
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @ArrayUnique()
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true })
  events?: WebhookEventType[];
}

export class UpdateWebhookEndpointDto {
  /** New address. */
  @IfPresent()
  @IsString()
  @IsWebhookUrl()
  url?: string;

  /** New set of events (replaces the old one). */
  @ApiProperty({ ...EVENTS_DOC, required: false })
  @IfPresent()
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @ArrayUnique()
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true })
  events?: WebhookEventType[];

  /** `false` stops deliveries to this endpoint (pending retries are dropped). */
  @IfPresent()
  @IsBoolean()
  enabled?: boolean;
}

export class WebhookEndpointDto {
  /** Identifier, `we_…`. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['webhook_endpoint'] })
  object!: 'webhook_endpoint';
  url!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true })
  events!: WebhookEventType[];
  enabled!: boolean;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
}

export class WebhookEndpointWithSecretDto extends WebhookEndpointDto {
  /** Signing secret, `whsec_…`: shown only on creation and rotation. */
  secret!: string;
}

export class WebhookEndpointDeletedDto {
  id!: string;
  @ApiProperty({ type: 'string', enum: ['webhook_endpoint'] })
  object!: 'webhook_endpoint';
  deleted!: boolean;
}

export class WebhookEndpointListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: WebhookEndpointDto[];
  /** Whether more objects follow. */
  has_more!: boolean;
  /** Id of the first item of the page. */
  first_id!: string | null;
  /** Id of the last item of the page: the `after` cursor of the next page. */
  last_id!: string | null;
}

export class WebhookTestResultDto {
  /** Whether the receiver answered 2xx within 10 s. */
  delivered!: boolean;
  /** The receiver's status; null when no response came. */
  @ApiProperty({ type: 'integer', nullable: true })
  status_code!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  latency_ms!: number | null;
  /** Why it was not delivered; null on success. */
  error!: string | null;
}
