import { Global, Module } from '@nestjs/common';
import { CHAT_ADAPTER_FACTORIES, SPEECH_ADAPTER_FACTORIES } from './adapter-factories';
import { AdapterRegistry } from './adapter-registry';
import { EspeakAdapterFactory } from './espeak.adapter';
import { ADAPTER_FACTORIES, AdapterFactory } from './provider-adapter';
import { StreamToleranceMetrics } from './stream-tolerance';

const factories = [...CHAT_ADAPTER_FACTORIES, ...SPEECH_ADAPTER_FACTORIES, EspeakAdapterFactory];

/** The upstream providers: one adapter per configured provider, each translating one vendor's wire format. */
@Global()
@Module({
  providers: [
    ...factories,
    { provide: ADAPTER_FACTORIES, inject: factories, useFactory: (...made: AdapterFactory[]) => made },
    AdapterRegistry,
    StreamToleranceMetrics,
  ],
  exports: [AdapterRegistry],
})
export class ProvidersModule {}
