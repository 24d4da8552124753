import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { hash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { EnvironmentVariables } from '../config/env.schema';
import { PgChangeFeed } from '../database/pg-change-feed';
import type { ChainStepDto } from '../config/chain-step.dto';
import { KeysRepository, KeysSignature } from './keys.repository';
import { ProxyKeyEntity } from './proxy-key.entity';

/** The tenant behind an authenticated request. */
export interface AuthenticatedKey {
  id: string;
  name: string;
  chain: ChainStepDto[];
}

export const KEYS_CHANNEL = 'svc_keys_changed';
/** Each replica answers a change notice here (with its token) once it serves the change. */
export const KEYS_APPLIED_CHANNEL = 'svc_keys_applied';
/** Unknown secrets share one check of the table at most this often, however many arrive. */
const MISS_CHECK_MS = 200;

/** SHA-256 hex of a key's secret (the one-shot `crypto.hash`: about half the cost of a Hash object per request). */
export const hashSecret = (secret: string): string => hash('sha256', secret, 'hex');

/**
 * Every key, in memory: authentication costs no database round trip. Writes on this replica
 * refresh it, NOTIFY the others and wait (at most one sync interval) until each has reloaded, so a
 * change holds on every replica from the next request; a signature poll is the safety net. An
 * unknown secret may be a key whose notice has not arrived, so it makes this replica check whether the
 * table changed; all the unknown secrets arriving meanwhile share that check, and another starts at
 * most every MISS_CHECK_MS, so a flood of made-up tokens costs the database nothing per token.
 */
@Injectable()
export class KeyDirectory implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(KeyDirectory.name);
  private byHash = new Map<string, AuthenticatedKey>();
  private byKeyId = new Map<string, AuthenticatedKey>();
  /** When the last check an unknown secret asked for ended; the one misses can still join; the one reading now. */
  private lastMissCheck = 0;
  private pendingCheck: Promise<void> | null = null;
  private runningCheck: Promise<void> | null = null;
  private signature: KeysSignature | null = null;
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private nextRefresh: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  /** Changes made here whose notice the other replicas have not all answered yet. */
  private readonly awaiting = new Map<string, { left: number; done: () => void }>();
  private stopped = false;

  constructor(
    private readonly repository: KeysRepository,
    private readonly feed: PgChangeFeed,
    private readonly env: EnvironmentVariables,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.reload();
    await this.feed.subscribe(KEYS_CHANNEL, (token) => void this.applyNotice(token));
    await this.feed.subscribe(KEYS_APPLIED_CHANNEL, (token) => this.answered(token));
    this.timer = setInterval(() => {
      this.polling ??= this.pollSignature().finally(() => (this.polling = null));
    }, this.env.SVC_SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  /** Runs before the database pool closes (onApplicationShutdown): no query of ours may outlive it. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([this.polling, this.nextRefresh, this.refreshing, this.pendingCheck, this.runningCheck]);
  }

  /** The key of `secret` when this replica holds it already: a memory read, no await (`authenticate` also asks the table). */
  known(secret: string): AuthenticatedKey | undefined {
    return this.byHash.get(hashSecret(secret));
  }

  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    const digest = hashSecret(secret);
    const known = this.byHash.get(digest);
    if (known) return known;
    await this.checkTable();
    return this.byHash.get(digest) ?? null;
  }

  /**
   * A check of the table that reads it after this call (one whose query has started may have missed a
   * key made just before); the misses arriving before its query share it, and it starts no sooner than
   * MISS_CHECK_MS after the previous one.
   */
  private checkTable(): Promise<void> {
    if (this.pendingCheck) return this.pendingCheck;
    const check: Promise<void> = (this.runningCheck ?? Promise.resolve())
      .then(async () => {
        const wait = this.lastMissCheck + MISS_CHECK_MS - Date.now();
        if (wait > 0) await sleep(wait);
        this.pendingCheck = null;
        this.runningCheck = check;
        if (!this.stopped) await this.pollSignature();
      })
      .finally(() => {
        this.lastMissCheck = Date.now();
        if (this.runningCheck === check) this.runningCheck = null;
      });
    this.pendingCheck = check;
    return check;
  }

  /** The key as this replica knows it now (its current chain), for work done outside a request (async speech tasks). */
  byId(id: string): AuthenticatedKey | null {
    return this.byKeyId.get(id) ?? null;
  }

  /** After a write on this replica: refresh here, tell the others, and wait until they serve it too. */
  async changed(): Promise<void> {
    await this.refresh();
    const token = randomUUID();
    const peers = await this.feed.peers().catch(() => 0);
    const answered = peers > 0 ? this.awaitAnswers(token, peers) : Promise.resolve();
    try {
      await this.feed.notify(KEYS_CHANNEL, token);
    } catch (err) {
      this.logger.warn(`NOTIFY failed: ${(err as Error).message}`);
      this.awaiting.get(token)?.done();
    }
    await answered;
  }

  /** Another replica changed a key: reload, then say so (its writer waits for every replica's answer). */
  private async applyNotice(token: string): Promise<void> {
    // this replica's own notice: it reloaded before sending it
    if (this.awaiting.has(token)) return;
    await this.refresh();
    if (token && !this.stopped) await this.feed.notify(KEYS_APPLIED_CHANNEL, token).catch(() => undefined);
  }

  private awaitAnswers(token: string, peers: number): Promise<void> {
    return new Promise((resolve) => {
      // a replica that does not answer (stopping, stalled) catches up by its poll within this interval anyway
      const timer = setTimeout(() => done(), this.env.SVC_SYNC_INTERVAL_MS);
      const done = (): void => {
        clearTimeout(timer);
        this.awaiting.delete(token);
        resolve();
      };
      this.awaiting.set(token, { left: peers, done });
    });
  }

  private answered(token: string): void {
    const entry = this.awaiting.get(token);
    if (entry && --entry.left <= 0) entry.done();
  }

  /** A reload that starts after this call: one already under way may have read the table before the change. */
  private refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.nextRefresh ??= (this.refreshing ?? Promise.resolve()).then(() => {
      this.nextRefresh = null;
      if (this.stopped) return;
      this.refreshing = this.reload()
        .catch((err: Error) => this.logger.warn(`key cache refresh failed: ${err.message}`))
        .finally(() => (this.refreshing = null));
      return this.refreshing;
    });
    return this.nextRefresh;
  }

  private async pollSignature(): Promise<void> {
    try {
      const current = await this.repository.signature();
      if (this.signature && current.count === this.signature.count && current.lastChange === this.signature.lastChange)
        return;
      await this.refresh();
    } catch (err) {
      this.logger.warn(`key cache poll failed: ${(err as Error).message}`);
    }
  }

  private async reload(): Promise<void> {
    const signature = await this.repository.signature();
    const rows = await this.repository.findAll();
    const keys = rows.map((row) => [row.secretHash, toAuthenticated(row)] as const);
    this.byHash = new Map(keys);
    this.byKeyId = new Map(keys.map(([, key]) => [key.id, key]));
    this.signature = signature;
  }
}

const toAuthenticated = (row: ProxyKeyEntity): AuthenticatedKey => ({ id: row.id, name: row.name, chain: row.chain });
