import { Injectable, type Type } from '@nestjs/common';
import type { ResolvedProvider } from '../config/gateway-config';
import type { ProviderKind } from '../config/provider-kinds';
import { providerClientOptions, requireBaseUrl, UpstreamClient, type UpstreamClientOptions } from './http';
import type { AdapterFactory, ProviderAdapter } from './provider-adapter';

/**
 * What every adapter of an HTTP provider shares: one keep-alive client for the provider's base URL, its
 * auth headers (built once: undici takes the same object on every call), a probe and the close on shutdown.
 */
export abstract class HttpProviderAdapter {
  protected readonly http: UpstreamClient;
  /** Only the credential: for GETs and multipart bodies. */
  protected readonly authHeaders: Record<string, string>;
  /** The credential and a JSON body. */
  protected readonly headers: Record<string, string>;

  protected constructor(
    readonly provider: ResolvedProvider,
    authHeaders: Record<string, string>,
    options: UpstreamClientOptions,
  ) {
    this.http = new UpstreamClient(requireBaseUrl(provider), providerClientOptions(provider, options));
    this.authHeaders = authHeaders;
    this.headers = { ...authHeaders, 'content-type': 'application/json' };
  }

  /** A free, authenticated GET (a model list): checks the host and the key without synthesising anything. */
  probe(signal: AbortSignal): Promise<void> {
    return this.http.check({ method: 'GET', path: '/models', headers: this.authHeaders, signal });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/** The injectable factory of one provider kind: `create` makes its adapter for a configured provider. */
export function adapterFactory<A extends ProviderAdapter>(
  kind: ProviderKind,
  make: (provider: ResolvedProvider, pool: UpstreamClientOptions) => A,
): Type<Omit<AdapterFactory, 'create'> & { create(provider: ResolvedProvider, pool?: UpstreamClientOptions): A }> {
  @Injectable()
  class KindAdapterFactory implements AdapterFactory {
    readonly kind = kind;

    create(provider: ResolvedProvider, pool: UpstreamClientOptions = {}): A {
      return make(provider, pool);
    }
  }
  Object.defineProperty(KindAdapterFactory, 'name', { value: `${kind}AdapterFactory` });
  return KindAdapterFactory;
}
