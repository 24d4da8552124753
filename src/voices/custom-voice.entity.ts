import {
  Column,
  CreateDateColumn,
  Entity,
  Generated,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  Unique,
} from 'typeorm';
import { VoiceConsentEntity } from '../consents/voice-consent.entity';
import { ProxyKeyEntity } from '../keys/proxy-key.entity';

export type VoiceMethod = 'clone' | 'design';

/** A custom voice of one key, made on one provider (cloned from a sample, or designed from a description). */
@Entity({ name: 'custom_voices' })
@Index('custom_voices_key_order', ['keyId', 'createdAt', 'seq'])
@Index('custom_voices_consent', ['consentId'])
@Unique('UQ_custom_voices_seq', ['seq'])
export class CustomVoiceEntity {
  /** `voice_…`. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_custom_voices' })
  id!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @ManyToOne(() => ProxyKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'FK_custom_voices_key' })
  key?: ProxyKeyEntity;

  /**
   * The consent behind a cloned voice. The foreign key (NO ACTION, checked at the end of the statement)
   * is what refuses to delete a consent a voice depends on, under any concurrency; deleting the key
   * still removes both in one statement.
   */
  @Column({ name: 'consent_id', type: 'text', nullable: true })
  consentId!: string | null;

  @ManyToOne(() => VoiceConsentEntity, { onDelete: 'NO ACTION' })
  @JoinColumn({ name: 'consent_id', foreignKeyConstraintName: 'FK_custom_voices_consent' })
  consent?: VoiceConsentEntity;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  method!: VoiceMethod;

  /** The description of a designed voice. */
  @Column({ type: 'text', nullable: true })
  prompt!: string | null;

  /** The configured provider that holds the voice. */
  @Column({ type: 'text' })
  provider!: string;

  /** The provider's own id of the voice (never shown to clients). */
  @Column({ name: 'upstream_voice_id', type: 'text' })
  upstreamVoiceId!: string;

  /** The provider's copy of the consent, when it keeps one (OpenAI). */
  @Column({ name: 'upstream_consent_id', type: 'text', nullable: true })
  upstreamConsentId!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Insertion order: breaks ties between equal timestamps so lists are stable. */
  @Column({ type: 'bigint' })
  @Generated('increment')
  seq!: string;
}
