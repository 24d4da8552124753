import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { EnvironmentVariables } from '../config/env.schema';

/** What one key may store (decisions §11): each quota with its setting and what the client can do about it. */
const QUOTAS = {
  pendingUploads: {
    setting: 'SVC_QUOTA_PENDING_UPLOADS',
    held: (limit: number) => `This key already holds ${limit} pending uploads`,
    then: 'an upload stays pending until it expires, 24 h after it was made',
  },
  pendingUploadBytes: {
    setting: 'SVC_QUOTA_PENDING_UPLOAD_BYTES',
    held: (limit: number) => `This upload would take the key's pending uploads past ${limit} bytes`,
    then: 'an upload stays pending until it expires, 24 h after it was made',
  },
  consents: {
    setting: 'SVC_QUOTA_CONSENTS',
    held: (limit: number) => `This key already holds ${limit} voice consents`,
    then: 'delete one it no longer needs first',
  },
  audioLinks: {
    setting: 'SVC_QUOTA_AUDIO_LINKS',
    held: (limit: number) => `This key already holds ${limit} live audio links (output_format "url")`,
    then: 'a link expires 24 h after it was made',
  },
} as const satisfies Record<
  string,
  { setting: keyof EnvironmentVariables; held: (limit: number) => string; then: string }
>;

export type StorageQuota = keyof typeof QUOTAS;

/** The storage quotas per key, as configured, and the one refusal past any of them: `429 quota_exceeded` naming it. */
@Injectable()
export class StorageQuotas {
  constructor(private readonly env: EnvironmentVariables) {}

  limit(quota: StorageQuota): number {
    return this.env[QUOTAS[quota].setting];
  }

  exceeded(quota: StorageQuota): DomainError {
    const { setting, held, then } = QUOTAS[quota];
    return new DomainError('quota_exceeded', `${held(this.limit(quota))} (the quota ${setting}); ${then}.`);
  }
}
