import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { EnvironmentVariables } from '../config/env.schema';
import { PgChangeFeed } from '../database/pg-change-feed';
import type { ChainStepDto } from './dto/chain-step.dto';
import { KeysRepository, KeysSignature } from './keys.repository';
import { ProxyKeyEntity } from './proxy-key.entity';

/** The tenant behind an authenticated request. */
export interface AuthenticatedKey {
  id: string;
  name: string;
  chain: ChainStepDto[];
}

export const KEYS_CHANNEL = 'svc_keys_changed';
const NEGATIVE_TTL_MS = 1000;
const NEGATIVE_MAX = 10000;

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/**
 * Every key, in memory: authentication costs no database round trip. Writes on this replica
 * refresh it before they answer; other replicas hear a NOTIFY at once and poll a signature as a
 * safety net. An unknown secret is looked up once (it may be a key just made on another replica)
 * and then remembered as unknown for a second.
 */
@Injectable()
export class KeyDirectory implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(KeyDirectory.name);
  private byHash = new Map<string, AuthenticatedKey>();
  private byKeyId = new Map<string, AuthenticatedKey>();
  private readonly unknown = new Map<string, number>();
  private signature: KeysSignature | null = null;
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly repository: KeysRepository,
    private readonly feed: PgChangeFeed,
    private readonly env: EnvironmentVariables,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.reload();
    await this.feed.subscribe(KEYS_CHANNEL, () => void this.refresh());
    this.timer = setInterval(() => {
      this.polling ??= this.pollSignature().finally(() => (this.polling = null));
    }, this.env.SVC_SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  /** Runs before the database pool closes (onApplicationShutdown): no query of ours may outlive it. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all([this.polling, this.refreshing]);
  }

  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    const hash = hashSecret(secret);
    const known = this.byHash.get(hash);
    if (known) return known;
    const unknownUntil = this.unknown.get(hash);
    if (unknownUntil !== undefined && unknownUntil > Date.now()) return null;
    const cache = this.byHash;
    const row = await this.repository.findBySecretHash(hash);
    if (row) {
      const key = toAuthenticated(row);
      // a reload during the lookup may already know the key is gone: never add a row it has not seen
      if (this.byHash === cache) {
        cache.set(hash, key);
        this.byKeyId.set(key.id, key);
      }
      return key;
    }
    if (this.unknown.size >= NEGATIVE_MAX) this.unknown.clear();
    this.unknown.set(hash, Date.now() + NEGATIVE_TTL_MS);
    return null;
  }

  /** The key as this replica knows it now (its current chain), for work done outside a request (async speech tasks). */
  byId(id: string): AuthenticatedKey | null {
    return this.byKeyId.get(id) ?? null;
  }

  /** After a write on this replica: refresh here, then tell the others. */
  async changed(): Promise<void> {
    await this.reload();
    await this.feed.notify(KEYS_CHANNEL).catch((err: Error) => this.logger.warn(`NOTIFY failed: ${err.message}`));
  }

  private refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.refreshing ??= this.reload()
      .catch((err: Error) => this.logger.warn(`key cache refresh failed: ${err.message}`))
      .finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private async pollSignature(): Promise<void> {
    try {
      const current = await this.repository.signature();
      if (this.signature && current.count === this.signature.count && current.lastChange === this.signature.lastChange) return;
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
    this.unknown.clear();
    this.signature = signature;
  }
}

const toAuthenticated = (row: ProxyKeyEntity): AuthenticatedKey => ({ id: row.id, name: row.name, chain: row.chain });
