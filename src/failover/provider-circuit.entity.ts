import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { BreakerStatus } from './circuit-breaker';

/** The shared circuit of one provider; every replica mirrors it in memory. */
@Entity({ name: 'provider_circuits' })
export class ProviderCircuitEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_provider_circuits' })
  provider!: string;

  @Column({ type: 'text' })
  status!: BreakerStatus;

  @Column({ name: 'consecutive_failures', type: 'integer' })
  consecutiveFailures!: number;

  /** While down: when the probe is due; while recovering: the probe's deadline. Epoch ms. */
  @Column({ name: 'open_until', type: 'bigint', nullable: true })
  openUntil!: string | null;

  /** Compare-and-set token: every write bumps it, so concurrent writers cannot both win. */
  @Column({ type: 'bigint' })
  version!: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
