import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import { PgChangeFeed } from '../database/pg-change-feed';
import { VoiceRemoval, VoiceRemovalsRepository } from './voice-removals.repository';
import { VoiceUpstream } from './voice-upstream';

export const VOICE_REMOVALS_CHANNEL = 'svc_voice_removals_changed';
/** The longest wait between two attempts of one removal, however many have failed. */
const MAX_BACKOFF_MS = 3_600_000;

const keyOf = (provider: string, upstreamVoiceId: string): string => `${provider}\u0000${upstreamVoiceId}`;

/**
 * Voices deleted here and not yet at their provider (decisions §6): each is kept in PostgreSQL and tried again,
 * `SVC_VOICE_REMOVAL_RETRY_MS` after a failure and twice as long after each further one (at most an hour), until the
 * provider accepts. Until then the voice cannot speak: `isPending` refuses its upstream id in every voice check.
 */
@Injectable()
export class VoiceRemovals implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(VoiceRemovals.name);
  /** This replica's copy of the pending removals: reloaded by every sweep and on NOTIFY. */
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly repository: VoiceRemovalsRepository,
    private readonly upstream: VoiceUpstream,
    private readonly feed: PgChangeFeed,
    private readonly env: EnvironmentVariables,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.reload();
    await this.feed.subscribe(VOICE_REMOVALS_CHANNEL, () => void this.reload().catch(() => undefined));
    this.timer = setInterval(() => void this.sweep(), this.env.SVC_VOICE_REMOVAL_RETRY_MS);
    this.timer.unref();
  }

  /** No statement outlives the pool. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  /** True while the provider still holds a voice deleted here: it must not speak. */
  isPending(provider: string, upstreamVoiceId: string): boolean {
    return this.pending.has(keyOf(provider, upstreamVoiceId));
  }

  /**
   * A custom voice row was just deleted (the database queued its removal in that statement): try the provider now,
   * so a healthy one has it gone before the answer. A sweep of this replica may have taken the removal first (it
   * is due from the moment the row goes); then the answer waits for that sweep's attempt instead.
   */
  async removeDeleted(removal: VoiceRemoval, requestId: string): Promise<void> {
    this.pending.add(keyOf(removal.provider, removal.upstreamVoiceId));
    await this.feed.notify(VOICE_REMOVALS_CHANNEL).catch(() => undefined);
    const [claimed] = await this.repository.claimDue(this.baseMs, this.maxMs, removal);
    if (claimed) await this.attempt(claimed, requestId);
    else await this.sweeping;
  }

  /** A voice made upstream that no row here holds (its consent went while it was made): queued, then tried now. */
  async removeUnstored(removal: VoiceRemoval, requestId: string): Promise<void> {
    await this.repository.add(removal);
    await this.removeDeleted(removal, requestId);
  }

  /** One sweep (overlapping calls share it): every removal that is due, tried once. */
  sweep(): Promise<void> {
    this.sweeping ??= this.run().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    try {
      for (const removal of await this.repository.claimDue(this.baseMs, this.maxMs)) {
        if (this.stopped) return;
        await this.attempt(removal);
      }
      await this.reload();
    } catch (err) {
      this.logger.warn(`voice removal sweep failed: ${(err as Error).message}`);
    }
  }

  private async attempt(removal: VoiceRemoval, requestId?: string): Promise<void> {
    const failure = await this.upstream.remove(
      removal.provider,
      {
        voiceId: removal.upstreamVoiceId,
        method: removal.method,
        ...(removal.upstreamConsentId ? { consentId: removal.upstreamConsentId } : {}),
      },
      requestId,
    );
    if (failure !== null) return this.repository.failed(removal, failure);
    await this.repository.done(removal);
    this.pending.delete(keyOf(removal.provider, removal.upstreamVoiceId));
    await this.feed.notify(VOICE_REMOVALS_CHANNEL).catch(() => undefined);
  }

  private async reload(): Promise<void> {
    const rows = await this.repository.pending();
    this.pending = new Set(rows.map((r) => keyOf(r.provider, r.upstreamVoiceId)));
  }

  private get baseMs(): number {
    return this.env.SVC_VOICE_REMOVAL_RETRY_MS;
  }

  private get maxMs(): number {
    return Math.max(MAX_BACKOFF_MS, this.baseMs);
  }
}
