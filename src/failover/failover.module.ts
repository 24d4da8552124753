import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsageModule } from '../usage/usage.module';
import { BreakerStore } from './breaker.store';
import { CircuitMetrics } from './circuit-metrics';
import { CircuitRegistry } from './circuit-registry';
import { EventsService } from './events.service';
import { GatewayEventsRepository } from './gateway-events.repository';
import { FailoverInterceptor } from './failover.interceptor';
import { FailoverService } from './failover.service';
import { GatewayEventEntity } from './gateway-event.entity';
import { ProvidersModule } from '../providers/providers.module';
import { ProviderCircuitEntity } from './provider-circuit.entity';
import { QuotasModule } from '../quotas/quotas.module';

/** The failover core shared by chat and every speech path. */
@Global()
@Module({
  imports: [
    TypeOrmModule.forFeature([ProviderCircuitEntity, GatewayEventEntity]),
    UsageModule,
    ProvidersModule,
    QuotasModule,
  ],
  providers: [
    CircuitMetrics,
    BreakerStore,
    CircuitRegistry,
    GatewayEventsRepository,
    EventsService,
    FailoverService,
    FailoverInterceptor,
  ],
  exports: [FailoverService, CircuitRegistry, ProvidersModule, EventsService, FailoverInterceptor],
})
export class FailoverModule {}
