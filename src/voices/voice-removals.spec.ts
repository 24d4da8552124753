import { EnvironmentVariables } from '../config/env.schema';
import { PgChangeFeed } from '../database/pg-change-feed';
import { VoiceRemovals } from './voice-removals';
import { VoiceRemoval, VoiceRemovalsRepository } from './voice-removals.repository';
import { VoiceUpstream } from './voice-upstream';

const REMOVAL: VoiceRemoval = {
  provider: 'minimax',
  upstreamVoiceId: 'svc_voice_1',
  method: 'clone',
  upstreamConsentId: null,
};

/** A table of one removal, taken at most once as the SQL's SKIP LOCKED and backoff would allow. */
class OneRemoval {
  taken = false;
  done = false;
  readonly repository = {
    claimDue: async (): Promise<VoiceRemoval[]> => {
      await Promise.resolve();
      if (this.taken || this.done) return [];
      this.taken = true;
      return [REMOVAL];
    },
    done: async (): Promise<void> => {
      this.done = true;
      await Promise.resolve();
    },
    failed: async (): Promise<void> => {
      this.taken = false;
      await Promise.resolve();
    },
    pending: async () => {
      await Promise.resolve();
      return this.done ? [] : [REMOVAL];
    },
  } as unknown as VoiceRemovalsRepository;
}

/** A provider whose deletion answers only when `answer` is called. */
class SlowProvider {
  calls = 0;
  private answers: Array<() => void> = [];
  readonly upstream = {
    remove: (): Promise<string | null> => {
      this.calls += 1;
      return new Promise((resolve) => this.answers.push(() => resolve(null)));
    },
  } as unknown as VoiceUpstream;

  answer(): void {
    for (const answer of this.answers.splice(0)) answer();
  }
}

const feed = {
  notify: async () => Promise.resolve(),
  subscribe: async () => Promise.resolve(),
} as unknown as PgChangeFeed;
const env = { SVC_VOICE_REMOVAL_RETRY_MS: 200 } as EnvironmentVariables;
const turns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i += 1) await Promise.resolve();
};

describe('VoiceRemovals', () => {
  it('tries a deleted voice at its provider before the answer', async () => {
    const table = new OneRemoval();
    const provider = new SlowProvider();
    const removals = new VoiceRemovals(table.repository, provider.upstream, feed, env);
    let answered = false;
    const deleting = removals.removeDeleted(REMOVAL, 'req_1').then(() => (answered = true));
    await turns();
    expect(provider.calls).toBe(1);
    expect(answered).toBe(false);
    provider.answer();
    await deleting;
    expect(table.done).toBe(true);
    expect(removals.isPending(REMOVAL.provider, REMOVAL.upstreamVoiceId)).toBe(false);
  });

  it('waits for the sweep that took the removal first, so the answer still comes after the provider call', async () => {
    const table = new OneRemoval();
    const provider = new SlowProvider();
    const removals = new VoiceRemovals(table.repository, provider.upstream, feed, env);
    // the row went, and this replica's timer swept before the request's own claim
    const sweeping = removals.sweep();
    await turns();
    expect(table.taken).toBe(true);
    let answered = false;
    const deleting = removals.removeDeleted(REMOVAL, 'req_1').then(() => (answered = true));
    await turns();
    expect(provider.calls).toBe(1);
    expect(answered).toBe(false);
    expect(removals.isPending(REMOVAL.provider, REMOVAL.upstreamVoiceId)).toBe(true);
    provider.answer();
    await deleting;
    await sweeping;
    expect(table.done).toBe(true);
    expect(removals.isPending(REMOVAL.provider, REMOVAL.upstreamVoiceId)).toBe(false);
  });
});
