import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DEFAULT_PAGE_SIZE, ListQueryDto } from '../common/http/pagination.dto';
import type { AuthenticatedKey } from '../keys/key-directory';
import { WebhookDeliveryListDto } from './dto/webhook-delivery.dto';
import {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookEndpointDeletedDto,
  WebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointWithSecretDto,
  WebhookTestResultDto,
} from './dto/webhook-endpoint.dto';
import { WebhooksService } from './webhooks.service';

@ApiTags('webhooks')
@ApiBearerAuth('proxy-key')
@ApiErrors(401)
@Controller('v1/user/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  /** Create an endpoint; the signing secret is in this answer only. */
  @Post()
  @ApiCreatedResponse({ type: WebhookEndpointWithSecretDto })
  @ApiErrors(400)
  create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: CreateWebhookEndpointDto,
  ): Promise<WebhookEndpointWithSecretDto> {
    return this.webhooks.create(key.id, body);
  }

  /** List endpoints, newest first, with cursor pagination. */
  @Get()
  @ApiOkResponse({ type: WebhookEndpointListDto })
  @ApiErrors(400)
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: ListQueryDto): Promise<WebhookEndpointListDto> {
    return this.webhooks.list(key.id, query.after, query.limit ?? DEFAULT_PAGE_SIZE);
  }

  /** Retrieve an endpoint (never its secret). */
  @Get(':webhook_id')
  @ApiOkResponse({ type: WebhookEndpointDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('webhook_id') id: string): Promise<WebhookEndpointDto> {
    return this.webhooks.get(key.id, id);
  }

  /** Change the URL, the events or `enabled`. */
  @Patch(':webhook_id')
  @ApiOkResponse({ type: WebhookEndpointDto })
  @ApiErrors(400, 404)
  update(
    @CurrentKey() key: AuthenticatedKey,
    @Param('webhook_id') id: string,
    @Body() body: UpdateWebhookEndpointDto,
  ): Promise<WebhookEndpointDto> {
    return this.webhooks.update(key.id, id, body);
  }

  /** Delete an endpoint, its pending deliveries and its delivery log. */
  @Delete(':webhook_id')
  @HttpCode(200)
  @ApiOkResponse({ type: WebhookEndpointDeletedDto })
  @ApiErrors(404)
  delete(@CurrentKey() key: AuthenticatedKey, @Param('webhook_id') id: string): Promise<WebhookEndpointDeletedDto> {
    return this.webhooks.delete(key.id, id);
  }

  /** Send a signed sample event now and report the receiver's answer. */
  @Post(':webhook_id/test')
  @HttpCode(200)
  @ApiOkResponse({ type: WebhookTestResultDto })
  @ApiErrors(404)
  test(@CurrentKey() key: AuthenticatedKey, @Param('webhook_id') id: string): Promise<WebhookTestResultDto> {
    return this.webhooks.test(key, id);
  }

  /** Replace the signing secret; the new one is in this answer only. */
  @Post(':webhook_id/rotate-secret')
  @HttpCode(200)
  @ApiOkResponse({ type: WebhookEndpointWithSecretDto })
  @ApiErrors(404)
  rotateSecret(
    @CurrentKey() key: AuthenticatedKey,
    @Param('webhook_id') id: string,
  ): Promise<WebhookEndpointWithSecretDto> {
    return this.webhooks.rotateSecret(key.id, id);
  }

  /** Delivery attempts to this endpoint, newest first. */
  @Get(':webhook_id/deliveries')
  @ApiOkResponse({ type: WebhookDeliveryListDto })
  @ApiErrors(400, 404)
  deliveries(
    @CurrentKey() key: AuthenticatedKey,
    @Param('webhook_id') id: string,
    @Query() query: ListQueryDto,
  ): Promise<WebhookDeliveryListDto> {
    return this.webhooks.deliveries(key.id, id, query.after, query.limit ?? DEFAULT_PAGE_SIZE);
  }
}
