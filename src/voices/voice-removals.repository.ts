import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { VoiceRemovalEntity } from './voice-removal.entity';

export type VoiceRemoval = Pick<VoiceRemovalEntity, 'provider' | 'upstreamVoiceId' | 'method' | 'upstreamConsentId'>;

const COLUMNS = `"provider", "upstream_voice_id" AS "upstreamVoiceId", "method", "upstream_consent_id" AS "upstreamConsentId"`;

/** Removals taken per sweep; the rest waits for the next one. */
const CLAIM_BATCH = 50;

/**
 * The upstream deletions still to do. Rows come from the database's own trigger on custom_voices (a deleted voice,
 * or all of a deleted key's) and from `add` (a voice made for nothing). Taking one moves its next attempt out by
 * the backoff in the same statement, so no two replicas try it at once and a crash mid-call only delays it.
 */
@Injectable()
export class VoiceRemovalsRepository {
  constructor(@InjectRepository(VoiceRemovalEntity) private readonly removals: Repository<VoiceRemovalEntity>) {}

  async add(removal: VoiceRemoval): Promise<void> {
    await this.removals.query(
      `INSERT INTO "voice_removals" ("provider", "upstream_voice_id", "method", "upstream_consent_id")
       VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
      [removal.provider, removal.upstreamVoiceId, removal.method, removal.upstreamConsentId],
    );
  }

  /** Every voice waiting for removal, by provider and upstream id (few: each is gone once its provider accepts). */
  async pending(): Promise<Array<Pick<VoiceRemoval, 'provider' | 'upstreamVoiceId'>>> {
    return this.removals.query(`SELECT "provider", "upstream_voice_id" AS "upstreamVoiceId" FROM "voice_removals"`);
  }

  /**
   * Takes the removals that are due (one voice's only, with `voice`), each rescheduled `baseMs · 2^attempts` later
   * (at most `maxMs`).
   */
  async claimDue(
    baseMs: number,
    maxMs: number,
    voice?: Pick<VoiceRemoval, 'provider' | 'upstreamVoiceId'>,
  ): Promise<VoiceRemoval[]> {
    const only = voice ? `AND "provider" = $3 AND "upstream_voice_id" = $4` : '';
    return this.removals.query(
      `WITH due AS (
         SELECT "provider", "upstream_voice_id" FROM "voice_removals"
         WHERE "next_attempt_at" <= now() ${only}
         ORDER BY "next_attempt_at" LIMIT ${CLAIM_BATCH} FOR UPDATE SKIP LOCKED),
       taken AS (
         UPDATE "voice_removals" r
         SET "attempts" = r."attempts" + 1,
             "next_attempt_at" = now() + make_interval(secs => least($1::float8 * power(2, least(r."attempts", 30)), $2::float8) / 1000)
         FROM due WHERE r."provider" = due."provider" AND r."upstream_voice_id" = due."upstream_voice_id"
         RETURNING r."provider", r."upstream_voice_id", r."method", r."upstream_consent_id")
       SELECT ${COLUMNS} FROM taken`,
      voice ? [baseMs, maxMs, voice.provider, voice.upstreamVoiceId] : [baseMs, maxMs],
    );
  }

  /** The provider accepted the deletion. */
  async done(removal: Pick<VoiceRemoval, 'provider' | 'upstreamVoiceId'>): Promise<void> {
    await this.removals.delete({ provider: removal.provider, upstreamVoiceId: removal.upstreamVoiceId });
  }

  async failed(removal: Pick<VoiceRemoval, 'provider' | 'upstreamVoiceId'>, error: string): Promise<void> {
    await this.removals.update(
      { provider: removal.provider, upstreamVoiceId: removal.upstreamVoiceId },
      { lastError: error.slice(0, 1000) },
    );
  }
}
