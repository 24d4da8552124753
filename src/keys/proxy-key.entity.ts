import { Column, CreateDateColumn, Entity, PrimaryColumn, Unique, UpdateDateColumn } from 'typeorm';
import type { ChainStepDto } from '../config/chain-step.dto';

@Entity({ name: 'proxy_keys' })
@Unique('UQ_proxy_keys_secret_hash', ['secretHash'])
export class ProxyKeyEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_proxy_keys' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  /** SHA-256 of the bearer secret (the secret has ≥190 bits of entropy, so a fast hash is enough). */
  @Column({ name: 'secret_hash', type: 'text' })
  secretHash!: string;

  /** Last four characters of the secret, to tell keys apart in listings. */
  @Column({ name: 'secret_hint', type: 'text' })
  secretHint!: string;

  @Column({ type: 'jsonb' })
  chain!: ChainStepDto[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
