import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsageModule } from '../usage/usage.module';
import { AdapterRegistry } from './adapter-registry';
import { EspeakAdapterFactory } from '../providers/espeak.adapter';
import { CHAT_ADAPTER_FACTORIES, SPEECH_ADAPTER_FACTORIES } from './adapters';
import { BreakerStore } from './breaker.store';
import { CircuitRegistry } from './circuit-registry';
import { EventsService } from './events.service';
import { FailoverInterceptor } from './failover.interceptor';
import { FailoverService } from './failover.service';
import { GatewayEventEntity } from './gateway-event.entity';
import { ADAPTER_FACTORIES, AdapterFactory } from './provider-adapter';
import { ProviderCircuitEntity } from './provider-circuit.entity';
import { UsageCaps } from './usage-caps.service';
import { UsageCounterEntity } from './usage-counter.entity';

const factories = [...CHAT_ADAPTER_FACTORIES, ...SPEECH_ADAPTER_FACTORIES, EspeakAdapterFactory];

/** The failover core shared by chat and every speech path. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([ProviderCircuitEntity, GatewayEventEntity, UsageCounterEntity]), UsageModule],
  providers: [
    ...factories,
    { provide: ADAPTER_FACTORIES, inject: factories, useFactory: (...made: AdapterFactory[]) => made },
    AdapterRegistry,
    BreakerStore,
    CircuitRegistry,
    EventsService,
    UsageCaps,
    FailoverService,
    FailoverInterceptor,
  ],
  exports: [FailoverService, CircuitRegistry, AdapterRegistry, EventsService, FailoverInterceptor],
})
export class FailoverModule {}
