import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EnvironmentVariables } from '../config/env.schema';
import { DeliveriesRepository } from './deliveries.repository';
import { EventsRetention } from './events-retention';
import { WebhookDeliveryWorker } from './delivery.worker';
import { DatabaseEndpoint } from '../database/database-endpoint';
import { SecretBox } from './secret-box';
import { secretBoxFor } from './secret-key';
import { SecretSealing } from './secret-sealing';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity';
import { WebhookFanoutStateEntity } from './webhook-fanout.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { WebhookFanout } from './webhook-fanout';
import { WebhookSender } from './webhook-sender';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/** Webhook endpoints of keys, and the delivery of stored failover and recovery events to them. */
@Module({
  imports: [
    TypeOrmModule.forFeature([
      WebhookEndpointEntity,
      WebhookDeliveryEntity,
      WebhookAttemptEntity,
      WebhookFanoutStateEntity,
    ]),
  ],
  controllers: [WebhooksController],
  providers: [
    {
      provide: SecretBox,
      inject: [EnvironmentVariables, DatabaseEndpoint],
      useFactory: (env: EnvironmentVariables, endpoint: DatabaseEndpoint) => secretBoxFor(env, endpoint.isEmbedded),
    },
    SecretSealing,
    WebhookSender,
    WebhooksRepository,
    DeliveriesRepository,
    WebhooksService,
    WebhookDeliveryWorker,
    WebhookFanout,
    EventsRetention,
  ],
})
export class WebhooksModule {}
