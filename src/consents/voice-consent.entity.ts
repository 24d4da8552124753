import {
  Column,
  CreateDateColumn,
  Entity,
  Generated,
  Index,
  JoinColumn,
  ManyToOne,
  OneToOne,
  PrimaryColumn,
  Unique,
} from 'typeorm';
import { ProxyKeyEntity } from '../keys/proxy-key.entity';

@Entity({ name: 'voice_consents' })
@Index('voice_consents_key_order', ['keyId', 'createdAt', 'seq'])
@Unique('UQ_voice_consents_seq', ['seq'])
export class VoiceConsentEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_voice_consents' })
  id!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @ManyToOne(() => ProxyKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'FK_voice_consents_key' })
  key?: ProxyKeyEntity;

  @Column({ type: 'text' })
  name!: string;

  /** Canonical BCP 47 tag. */
  @Column({ type: 'text' })
  language!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Insertion order: breaks ties between equal timestamps so pages are stable. */
  @Column({ type: 'bigint' })
  @Generated('increment')
  seq!: string;

  @Column({ name: 'recording_type', type: 'text' })
  recordingType!: string;

  @Column({ name: 'recording_size', type: 'integer' })
  recordingSize!: number;
}

/** The consent's audio, kept apart so listings never read the bytes. */
@Entity({ name: 'consent_recordings' })
export class ConsentRecordingEntity {
  @PrimaryColumn({ name: 'consent_id', type: 'text', primaryKeyConstraintName: 'PK_consent_recordings' })
  consentId!: string;

  @OneToOne(() => VoiceConsentEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'consent_id', foreignKeyConstraintName: 'FK_consent_recordings_consent' })
  consent?: VoiceConsentEntity;

  @Column({ type: 'bytea' })
  data!: Buffer;
}
