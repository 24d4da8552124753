import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { ADAPTER_FACTORIES, AdapterFactory, ProviderAdapter } from './provider-adapter';

/** One adapter per configured provider, made by the factory of its kind. */
@Injectable()
export class AdapterRegistry implements OnApplicationShutdown {
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(gateway: GatewayConfig, @Inject(ADAPTER_FACTORIES) factories: AdapterFactory[]) {
    for (const provider of gateway.providers) {
      const factory = factories.find((f) => f.kind === provider.kind);
      if (factory) this.adapters.set(provider.name, factory.create(provider));
    }
  }

  get(provider: string): ProviderAdapter | undefined {
    return this.adapters.get(provider);
  }

  all(): ProviderAdapter[] {
    return [...this.adapters.values()];
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.all().map((adapter) => adapter.close?.() ?? Promise.resolve()));
  }
}
