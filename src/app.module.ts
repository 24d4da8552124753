import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { LoggerModule } from 'nestjs-pino';
import { AdminToken } from './auth/admin-token';
import { globalPipelineProviders } from './auth/global-pipeline';
import { loggerParams } from './config/logging';
import { ChatModule } from './chat/chat.module';
import { AppConfigModule } from './config/config.module';
import { EnvironmentVariables } from './config/env.schema';
import { ConsentsModule } from './consents/consents.module';
import { DatabaseEndpoint } from './database/database-endpoint';
import { DatabaseModule } from './database/database.module';
import { AudioModule } from './audio/audio.module';
import { FailoverModule } from './failover/failover.module';
import { HealthModule } from './health/health.module';
import { KeysModule } from './keys/keys.module';
import { QuotasModule } from './quotas/quotas.module';
import { MetricsModule } from './metrics/metrics.module';
import { MiniMaxCompatModule } from './minimax-compat/minimax-compat.module';
import { ModelsModule } from './models/models.module';
import { SpeechModule } from './speech/speech.module';
import { UsageModule } from './usage/usage.module';
import { TracingModule } from './tracing/tracing.module';
import { VoicesModule } from './voices/voices.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [
    AppConfigModule,
    LoggerModule.forRootAsync({ inject: [EnvironmentVariables], useFactory: loggerParams }),
    ScheduleModule.forRoot(),
    DatabaseModule,
    MetricsModule,
    TracingModule,
    AudioModule,
    KeysModule,
    QuotasModule,
    ConsentsModule,
    UsageModule,
    FailoverModule,
    ChatModule,
    ModelsModule,
    SpeechModule,
    VoicesModule,
    HealthModule,
    WebhooksModule,
    MiniMaxCompatModule,
  ],
  providers: [
    {
      provide: AdminToken,
      inject: [EnvironmentVariables, DatabaseEndpoint],
      useFactory: (env: EnvironmentVariables, endpoint: DatabaseEndpoint) =>
        AdminToken.fromEnvironment(env.SVC_ADMIN_TOKEN, endpoint.isEmbedded),
    },
    ...globalPipelineProviders(),
  ],
})
export class AppModule {}
