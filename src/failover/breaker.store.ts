import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { BreakerState } from './circuit-breaker';
import { ProviderCircuitEntity } from './provider-circuit.entity';

/** A circuit as stored: the breaker state plus the compare-and-set version. */
export interface StoredCircuit {
  provider: string;
  state: BreakerState;
  version: number;
}

const toStored = (row: ProviderCircuitEntity): StoredCircuit => ({
  provider: row.provider,
  state: {
    status: row.status,
    consecutiveFailures: row.consecutiveFailures,
    openUntil: row.openUntil === null ? null : Number(row.openUntil),
  },
  version: Number(row.version),
});

/** All SQL of the circuits. Writes are compare-and-set, so of two replicas only one wins a transition. */
@Injectable()
export class BreakerStore {
  constructor(@InjectRepository(ProviderCircuitEntity) private readonly circuits: Repository<ProviderCircuitEntity>) {}

  async all(): Promise<StoredCircuit[]> {
    return (await this.circuits.find()).map(toStored);
  }

  async get(provider: string): Promise<StoredCircuit | null> {
    const row = await this.circuits.findOneBy({ provider });
    return row ? toStored(row) : null;
  }

  /** Creates the row of a provider the first time it is written (version 0). */
  async ensure(provider: string, initial: BreakerState): Promise<void> {
    await this.circuits
      .createQueryBuilder()
      .insert()
      .values({ provider, status: initial.status, consecutiveFailures: initial.consecutiveFailures, openUntil: null, version: '0' })
      .orIgnore()
      .execute();
  }

  /** Writes `next` only if the row is still at `version`; true when this writer won. */
  async compareAndSet(provider: string, version: number, next: BreakerState): Promise<boolean> {
    const result = await this.circuits
      .createQueryBuilder()
      .update()
      .set({
        status: next.status,
        consecutiveFailures: next.consecutiveFailures,
        openUntil: next.openUntil === null ? null : String(next.openUntil),
        version: String(version + 1),
      })
      .where('provider = :provider AND version = :version', { provider, version: String(version) })
      .execute();
    return (result.affected ?? 0) === 1;
  }
}
