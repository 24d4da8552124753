import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import { GatewayConfig } from '../config/gateway-config';
import { accountCircuit } from '../config/accounts';
import { AccountPool } from './account-pool';
import type { UpstreamClientOptions } from './http';
import { ADAPTER_FACTORIES, AdapterFactory, ProviderAdapter } from './provider-adapter';

/**
 * One adapter per configured provider, made by the factory of its kind; a provider with accounts (decisions §7) has
 * one per account (each sends its account's key), under `provider/account`, and its pool of them.
 */
@Injectable()
export class AdapterRegistry implements OnApplicationShutdown {
  private readonly adapters = new Map<string, ProviderAdapter>();
  /** The providers with accounts; empty on a gateway without any (the hot path checks its size only). */
  readonly pools = new Map<string, AccountPool>();

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
      if (!factory) continue;
      if (!provider.accounts) {
        this.adapters.set(provider.name, factory.create(provider, pool));
        continue;
      }
      const accounts = new AccountPool(provider.name);
      for (const account of provider.accounts) {
        const adapter = factory.create({ ...provider, apiKey: account.apiKey, groupId: account.groupId }, pool);
        this.adapters.set(accountCircuit(provider.name, account.name), adapter);
        accounts.add(account, adapter);
      }
      // what is not a chain step's call (voice lists, clones) goes to the first account
      this.adapters.set(provider.name, accounts.slots[0].adapter);
      this.pools.set(provider.name, accounts);
    }
  }

  /** A provider's adapter (its first account's when it has several), or an account's by `provider/account`. */
  get(provider: string): ProviderAdapter | undefined {
    return this.adapters.get(provider);
  }

  /** The accounts of `provider`; undefined for one with a single `api_key`. */
  pool(provider: string): AccountPool | undefined {
    return this.pools.size === 0 ? undefined : this.pools.get(provider);
  }

  all(): ProviderAdapter[] {
    return [...new Set(this.adapters.values())];
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.all().map((adapter) => adapter.close?.() ?? Promise.resolve()));
  }
}
