import { Injectable, OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { GatewayConfig } from '../config/gateway-config';
import { MetricsService } from '../metrics/metrics.service';
import type { BreakerStatus } from './circuit-breaker';
import { CircuitRegistry } from './circuit-registry';

const BREAKER_STATES: BreakerStatus[] = ['healthy', 'degraded', 'recovering', 'down'];

/** The circuits' series, read from memory when /metrics is scraped (registered by their owner). */
@Injectable()
export class CircuitMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly circuits: CircuitRegistry,
    private readonly gateway: GatewayConfig,
  ) {}

  onModuleInit(): void {
    const registers = [this.metrics.registry];
    const circuits = this.circuits;
    const providers = this.gateway.providers.map((p) => p.name);
    new Gauge({
      name: 'svc_circuit_state',
      help: "Each provider's circuit breaker as this replica sees it: 1 for its current state, 0 for the others.",
      labelNames: ['provider', 'state'],
      registers,
      collect() {
        const now = Date.now();
        for (const provider of providers) {
          const { status } = circuits.view(provider, now);
          for (const state of BREAKER_STATES) this.set({ provider, state }, state === status ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: 'svc_circuit_consecutive_failures',
      help: "Consecutive failures counted by each provider's circuit breaker.",
      labelNames: ['provider'],
      registers,
      collect() {
        const now = Date.now();
        for (const provider of providers) this.set({ provider }, circuits.view(provider, now).consecutive_failures);
      },
    });
    // providers with accounts (decisions §7): each account by name, never by key
    const pooled = providers.filter((provider) => circuits.accounts(provider) !== undefined);
    if (pooled.length === 0) return;
    new Gauge({
      name: 'svc_account_circuit_state',
      help: "Each provider account's own circuit breaker as this replica sees it: 1 for its current state, 0 for the others.",
      labelNames: ['provider', 'account', 'state'],
      registers,
      collect() {
        const now = Date.now();
        for (const provider of pooled)
          for (const { name, status } of circuits.accounts(provider, now) ?? [])
            for (const state of BREAKER_STATES) this.set({ provider, account: name, state }, state === status ? 1 : 0);
      },
    });
    new Gauge({
      name: 'svc_account_in_flight',
      help: 'Calls in flight on each provider account, counted by this replica (max_concurrency is per replica).',
      labelNames: ['provider', 'account'],
      registers,
      collect() {
        for (const provider of pooled)
          for (const { name, in_flight } of circuits.accounts(provider) ?? [])
            this.set({ provider, account: name }, in_flight);
      },
    });
  }
}
