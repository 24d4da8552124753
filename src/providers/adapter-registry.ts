import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import { GatewayConfig } from '../config/gateway-config';
import type { UpstreamClientOptions } from './http';
import { ADAPTER_FACTORIES, AdapterFactory, ProviderAdapter } from './provider-adapter';

/** One adapter per configured provider, made by the factory of its kind. */
@Injectable()
export class AdapterRegistry implements OnApplicationShutdown {
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(
    gateway: GatewayConfig,
    @Inject(ADAPTER_FACTORIES) factories: AdapterFactory[],
    @Optional() env?: EnvironmentVariables,
  ) {
    // every HTTP provider's socket pool and each key's share of it (decisions §11)
    const pool: UpstreamClientOptions = env
      ? { connections: env.SVC_UPSTREAM_CONNECTIONS, keyShare: env.SVC_UPSTREAM_KEY_SHARE }
      : {};
    for (const provider of gateway.providers) {
      const factory = factories.find((f) => f.kind === provider.kind);
      if (factory) this.adapters.set(provider.name, factory.create(provider, pool));
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
