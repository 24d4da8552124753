import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { UsageCapDto } from '../config/chain-step.dto';
import { EnvironmentVariables } from '../config/env.schema';
import { SharedCounts } from './shared-counts';
import { StepQuotasRepository } from './step-quotas.repository';
import { stepQuotaKey, WindowCounter } from './window-counter';

/**
 * The quota of each key's chain step (its `usage_cap`), checked in memory (no SQL per request) and
 * shared between replicas every sync interval (SharedCounts).
 */
@Injectable()
export class StepQuotas implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly counts: SharedCounts;

  constructor(
    repository: StepQuotasRepository,
    private readonly env: EnvironmentVariables,
  ) {
    this.counts = new SharedCounts(new WindowCounter(), repository, StepQuotas.name);
  }

  onApplicationBootstrap(): void {
    this.counts.start(this.env.SVC_SYNC_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.counts.stop();
  }

  /** Counts the request against the step's quota; false means it is used up and the step is skipped. */
  tryConsume(keyId: string, chainIndex: number, cap: UsageCapDto): boolean {
    return this.counts.counter.tryConsume(stepQuotaKey(keyId, chainIndex), cap, Date.now());
  }

  sync(): Promise<void> {
    return this.counts.sync();
  }
}
