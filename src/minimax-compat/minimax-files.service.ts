import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { DomainError, notFound } from '../common/errors/domain-error';
import { randomBase62 } from '../common/ids';
import { MiniMaxFileEntity, MiniMaxFilePurpose } from './minimax-file.entity';
import { MiniMaxFileLimits, MiniMaxFilesRepository, NewMiniMaxFile } from './minimax-files.repository';
import { StorageSpace } from '../database/storage-space';
import { StorageQuotas } from '../quotas/storage-quotas';

/** How long a T2A link downloads (decisions §10), and how long an upload waits for its clone. */
export const LINK_TTL_MS = 24 * 60 * 60 * 1000;
export const UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;
/** The path of a link's download, under the gateway's own host. */
export const AUDIO_LINK_PATH = 'v1/t2a_v2/audio';

const UPLOAD_PURPOSES: readonly string[] = ['voice_clone', 'prompt_audio'];

/** MiniMax's file object (`file_id` is a number there and here). */
export interface MiniMaxFileDto {
  file_id: number;
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  download_url?: string;
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

export const toFileDto = (
  row: Pick<MiniMaxFileEntity, 'id' | 'bytes' | 'createdAt' | 'filename' | 'purpose'>,
): MiniMaxFileDto => ({
  file_id: Number(row.id),
  bytes: row.bytes,
  created_at: Math.floor(new Date(row.createdAt).getTime() / 1000),
  filename: row.filename,
  purpose: row.purpose,
});

/**
 * Uploads for cloning, and T2A audio behind unguessable links that expire. Both count against the key's
 * storage quotas while they are unexpired (an upload stays pending for its 24 h, whether or not a clone
 * has read it: a clone reads its sample, it does not consume it), and the free-space guard refuses both.
 */
@Injectable()
export class MiniMaxFilesService {
  constructor(
    private readonly repository: MiniMaxFilesRepository,
    private readonly quotas: StorageQuotas,
    private readonly space: StorageSpace,
  ) {}

  /**
   * Throws what storing a link would: the free-space guard's 507, or 429 when the key's links are at their
   * quota. Asked before synthesis, so a request that could not be stored spends no provider call.
   */
  async assertLinkRoom(keyId: string): Promise<void> {
    this.space.assertRoom();
    if ((await this.repository.held(keyId, 'links')).files >= this.quotas.limit('audioLinks'))
      throw this.quotas.exceeded('audioLinks');
  }

  /** Stores the file within the quotas of its kind (the count decided under a lock at the insert itself). */
  private async store(file: NewMiniMaxFile): Promise<MiniMaxFileEntity> {
    this.space.assertRoom();
    const links = file.purpose === 't2a';
    const limits: MiniMaxFileLimits = links
      ? { files: this.quotas.limit('audioLinks'), bytes: null }
      : { files: this.quotas.limit('pendingUploads'), bytes: this.quotas.limit('pendingUploadBytes') };
    const stored = await this.repository.insertWithinLimits(file, limits);
    if (stored === 'files') throw this.quotas.exceeded(links ? 'audioLinks' : 'pendingUploads');
    if (stored === 'bytes') throw this.quotas.exceeded('pendingUploadBytes');
    return stored;
  }

  /** Stores audio for `output_format: "url"`; the link (`baseUrl` + path + token) needs no key for 24 h. */
  async link(keyId: string, audio: Buffer, contentType: string, format: string, baseUrl: string): Promise<string> {
    // 43 base62 characters: 256 bits, never guessed; only its hash is stored, so a database dump opens no link
    const token = randomBase62(43);
    await this.store({
      keyId,
      purpose: 't2a',
      filename: `audio.${format}`,
      contentType,
      data: audio,
      linkHash: hashOf(token),
      expiresAt: new Date(Date.now() + LINK_TTL_MS),
    });
    return `${baseUrl}/${AUDIO_LINK_PATH}/${token}.${format}`;
  }

  /** The audio behind a link; 404 once it has expired (or for a token that never was). */
  async download(tokenWithExtension: string): Promise<{ contentType: string; data: Buffer; filename: string }> {
    const token = tokenWithExtension.replace(/\.[a-z0-9]{1,5}$/, '');
    const row = /^[0-9A-Za-z]{43}$/.test(token) ? await this.repository.findByLink(hashOf(token)) : null;
    if (!row)
      throw new DomainError(
        'resource_not_found',
        'No audio at this link: it expired (links last 24 h) or never existed.',
      );
    return { contentType: row.contentType, data: row.data, filename: row.filename };
  }

  /** `POST /v1/files/upload`. */
  async upload(
    keyId: string,
    purpose: string | undefined,
    file: { buffer: Buffer; originalname?: string; mimetype?: string } | undefined,
  ): Promise<MiniMaxFileDto> {
    if (!purpose) throw new DomainError('missing_field', "Missing required field 'purpose'.", { param: 'purpose' });
    if (!UPLOAD_PURPOSES.includes(purpose)) {
      throw new DomainError('invalid_value', `'purpose' must be one of ${UPLOAD_PURPOSES.join(', ')}.`, {
        param: 'purpose',
      });
    }
    if (!file) throw new DomainError('missing_field', "Missing required file 'file'.", { param: 'file' });
    const row = await this.store({
      keyId,
      purpose: purpose as MiniMaxFilePurpose,
      filename: file.originalname ?? 'upload',
      contentType: file.mimetype ?? 'application/octet-stream',
      data: file.buffer,
      linkHash: null,
      expiresAt: new Date(Date.now() + UPLOAD_TTL_MS),
    });
    return toFileDto(row);
  }

  /** `GET /v1/files/retrieve` of an upload. */
  async describe(keyId: string, fileId: string): Promise<MiniMaxFileDto> {
    const row = await this.repository.findOwned(keyId, fileId);
    if (!row || row.purpose === 't2a') throw notFound('file', fileId, 'file_id');
    return toFileDto(row);
  }

  /** The bytes of the key's upload for `purpose` (a clone's sample). */
  async uploaded(keyId: string, fileId: number, purpose: MiniMaxFilePurpose): Promise<Buffer> {
    const row = await this.repository.findOwnedWithData(keyId, String(fileId));
    if (!row || row.purpose !== purpose) throw notFound(`${purpose} upload`, String(fileId), 'file_id');
    return row.data;
  }
}
