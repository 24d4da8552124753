import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { ProxyKeyEntity } from '../keys/proxy-key.entity';

/** What a MiniMax-native file holds: a client's upload (`voice_clone`, `prompt_audio`), or T2A audio served by link (`t2a`). */
export type MiniMaxFilePurpose = 'voice_clone' | 'prompt_audio' | 't2a';

/**
 * A file of the MiniMax-native surface, numbered as MiniMax numbers its `file_id`s. A `t2a` file is
 * downloaded without a key by whoever holds its link: only the SHA-256 of the link's token is stored.
 */
@Entity({ name: 'minimax_files' })
@Index('minimax_files_expires', ['expiresAt'])
@Index('minimax_files_key', ['keyId'])
export class MiniMaxFileEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'PK_minimax_files' })
  id!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @ManyToOne(() => ProxyKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'FK_minimax_files_key' })
  key?: ProxyKeyEntity;

  @Column({ type: 'text' })
  purpose!: MiniMaxFilePurpose;

  @Column({ type: 'text' })
  filename!: string;

  @Column({ name: 'content_type', type: 'text' })
  contentType!: string;

  @Column({ type: 'integer' })
  bytes!: number;

  /** Only the download and the clone read it. */
  @Column({ type: 'bytea', select: false })
  data!: Buffer;

  /** SHA-256 (hex) of the download link's token; null for uploads, which have no link. */
  @Index('minimax_files_link', { unique: true })
  @Column({ name: 'link_hash', type: 'text', nullable: true })
  linkHash!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
