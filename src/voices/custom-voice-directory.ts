import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { PgChangeFeed } from '../database/pg-change-feed';
import type { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoicesRepository } from './custom-voices.repository';

export const VOICES_CHANNEL = 'svc_voices_changed';
/** `voice_` and 24 base62 characters: only ids of this shape are looked up (a built-in voice costs no query). */
const CUSTOM_ID = /^voice_[0-9A-Za-z]{24}$/;
/** A voice never changes, it is only deleted (evicted here and, by NOTIFY, on every replica); the TTL is the safety net. */
const FOUND_TTL_MS = 30_000;
const MISSING_TTL_MS = 1_000;
const MAX_ENTRIES = 10_000;

/** True when `id` has the shape of a custom voice id of this service. */
export const looksLikeCustomVoiceId = (id: string): boolean => CUSTOM_ID.test(id);

/** Custom voices by id, from memory: speech with a custom voice runs no query once its voice is known. */
@Injectable()
export class CustomVoiceDirectory implements OnApplicationBootstrap {
  private readonly logger = new Logger(CustomVoiceDirectory.name);
  private readonly cache = new Map<string, { voice: CustomVoiceEntity | null; until: number }>();

  constructor(
    private readonly repository: CustomVoicesRepository,
    private readonly feed: PgChangeFeed,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.feed.subscribe(VOICES_CHANNEL, (id) => this.cache.delete(id));
  }

  /** The key's custom voice with this id; null for any other id (another key's voices included). */
  async find(keyId: string, id: string): Promise<CustomVoiceEntity | null> {
    if (!looksLikeCustomVoiceId(id)) return null;
    const now = Date.now();
    const hit = this.cache.get(id);
    let voice: CustomVoiceEntity | null;
    if (hit && hit.until > now) {
      voice = hit.voice;
    } else {
      voice = await this.repository.findById(id);
      if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
      this.cache.set(id, { voice, until: now + (voice ? FOUND_TTL_MS : MISSING_TTL_MS) });
    }
    return voice?.keyId === keyId ? voice : null;
  }

  /** After a create or delete here: drop this replica's entry, then tell the others. */
  async changed(id: string): Promise<void> {
    this.cache.delete(id);
    await this.feed.notify(VOICES_CHANNEL, id).catch((err: Error) => this.logger.warn(`NOTIFY failed: ${err.message}`));
  }
}
