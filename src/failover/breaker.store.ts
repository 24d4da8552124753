import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import type { BreakerState } from './circuit-breaker';
import { ProviderCircuitEntity } from './provider-circuit.entity';

/** A circuit as stored: the breaker state plus the compare-and-set version. */
export interface StoredCircuit {
  provider: string;
  state: BreakerState;
  version: number;
}

/** A row as the raw SELECT below returns it (bigints as text). */
interface CircuitRow {
  provider: string;
  status: ProviderCircuitEntity['status'];
  consecutive_failures: number;
  open_until: string | null;
  version: string;
}

const fromRow = (row: CircuitRow): StoredCircuit => ({
  provider: row.provider,
  state: {
    status: row.status,
    consecutiveFailures: row.consecutive_failures,
    openUntil: row.open_until === null ? null : Number(row.open_until),
  },
  version: Number(row.version),
});

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
  constructor(
    @InjectRepository(ProviderCircuitEntity) private readonly circuits: Repository<ProviderCircuitEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  async all(): Promise<StoredCircuit[]> {
    return (await this.circuits.find()).map(toStored);
  }

  /** The hot statements below are raw SQL: a failing provider writes its circuit on every flush. */
  async get(provider: string): Promise<StoredCircuit | null> {
    const rows: CircuitRow[] = await this.dataSource.query(
      'SELECT provider, status, consecutive_failures, open_until, version FROM provider_circuits WHERE provider = $1',
      [provider],
    );
    return rows.length > 0 ? fromRow(rows[0]) : null;
  }

  /** Creates the row of a provider the first time it is written (version 0). */
  async ensure(provider: string, initial: BreakerState): Promise<void> {
    await this.dataSource.query(
      'INSERT INTO provider_circuits (provider, status, consecutive_failures, open_until, version) VALUES ($1, $2, $3, NULL, 0) ON CONFLICT DO NOTHING',
      [provider, initial.status, initial.consecutiveFailures],
    );
  }

  /** Writes `next` only if the row is still at `version`; true when this writer won. */
  async compareAndSet(provider: string, version: number, next: BreakerState): Promise<boolean> {
    const [, affected]: [unknown, number] = await this.dataSource.query(
      `UPDATE provider_circuits SET status = $1, consecutive_failures = $2, open_until = $3, version = $4, updated_at = now()
       WHERE provider = $5 AND version = $6`,
      [
        next.status,
        next.consecutiveFailures,
        next.openUntil === null ? null : String(next.openUntil),
        String(version + 1),
        provider,
        String(version),
      ],
    );
    return affected === 1;
  }
}
