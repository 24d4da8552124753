import { Injectable, type Type } from '@nestjs/common';
import type { ResolvedProvider } from '../config/gateway-config';
import type { ProviderKind } from '../config/provider-kinds';
import { providerClientOptions, requireBaseUrl, UpstreamClient, type UpstreamClientOptions } from './http';
import type { AdapterFactory, ProviderAdapter } from './provider-adapter';
import type { UpstreamExecutor } from './upstream-executor';

/**
 * What every adapter of an HTTP provider shares: the executor of its upstream calls (by default an UpstreamClient,
 * one keep-alive pool for the provider's base URL; a test gives a scripted one), its auth headers (built once: the
 * transport takes the same object on every call), a probe and the close on shutdown. An adapter is transforms
 * only: a gateway call into an UpstreamCall, the reply into the gateway's shape; the executor does the rest.
 */
export abstract class HttpProviderAdapter {
  protected readonly upstream: UpstreamExecutor;
  /** Only the credential: for GETs and multipart bodies. */
  protected readonly authHeaders: Record<string, string>;
  /** The credential and a JSON body. */
  protected readonly headers: Record<string, string>;

  protected constructor(
    readonly provider: ResolvedProvider,
    authHeaders: Record<string, string>,
    options: UpstreamClientOptions,
    executor?: UpstreamExecutor,
  ) {
    this.upstream = executor ?? new UpstreamClient(requireBaseUrl(provider), providerClientOptions(provider, options));
    this.authHeaders = authHeaders;
    this.headers = { ...authHeaders, 'content-type': 'application/json' };
  }

  /** A free, authenticated GET (a model list): checks the host and the key without synthesising anything. */
  probe(signal: AbortSignal): Promise<void> {
    return this.upstream.check({ method: 'GET', path: '/models', headers: this.authHeaders, signal });
  }

  close(): Promise<void> {
    return this.upstream.close();
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
