import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';
import type { VoiceMethod } from './custom-voice.entity';

/**
 * A voice to remove at its provider, kept until the provider accepts the deletion. Written by the database
 * itself whenever a custom voice row goes (its own delete, or its key's), and for a voice made for nothing.
 */
@Entity({ name: 'voice_removals' })
@Index('voice_removals_due', ['nextAttemptAt'])
export class VoiceRemovalEntity {
  /** The configured provider that holds the voice. */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_voice_removals' })
  provider!: string;

  @PrimaryColumn({ name: 'upstream_voice_id', type: 'text', primaryKeyConstraintName: 'PK_voice_removals' })
  upstreamVoiceId!: string;

  @Column({ type: 'text' })
  method!: VoiceMethod;

  @Column({ name: 'upstream_consent_id', type: 'text', nullable: true })
  upstreamConsentId!: string | null;

  /** Deletions tried so far (the backoff doubles with each). */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt!: Date;

  /** Why the last attempt failed, for operators. */
  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
