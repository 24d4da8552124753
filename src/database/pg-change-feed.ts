import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { DatabaseEndpoint } from './database-endpoint';
import { KEEP_ALIVE_DELAY_MS } from './typeorm-options';

type Handler = (payload: string) => void;

/** The application_name of every replica's listening connection, so replicas can count each other. */
const LISTENER_NAME = 'svc-gateway-listen';

/**
 * Cross-replica change notices over LISTEN/NOTIFY on one dedicated connection. A speed-up only:
 * every subscriber also polls, because NOTIFY can be missed (reconnects) and does not exist
 * across connections of the embedded database.
 */
@Injectable()
export class PgChangeFeed implements OnApplicationShutdown {
  private readonly logger = new Logger(PgChangeFeed.name);
  private readonly handlers = new Map<string, Handler[]>();
  private client: Client | null = null;
  private connecting: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly endpoint: DatabaseEndpoint,
    private readonly dataSource: DataSource,
  ) {}

  /** Runs `handler` when another session (or this one) notifies `channel`. */
  async subscribe(channel: string, handler: Handler): Promise<void> {
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
    if (this.endpoint.isEmbedded) return;
    await this.connect();
    await this.client
      ?.query(`LISTEN "${channel}"`)
      .catch((err: Error) => this.logger.warn(`LISTEN ${channel} failed: ${err.message}`));
  }

  /** How many other sessions listen as this feed does (the other replicas); 0 while this feed is not connected. */
  async peers(): Promise<number> {
    if (this.endpoint.isEmbedded || !this.client) return 0;
    const rows: Array<{ n: number }> = await this.dataSource.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [LISTENER_NAME],
    );
    return Math.max(0, rows[0].n - 1);
  }

  async notify(channel: string, payload = ''): Promise<void> {
    if (this.endpoint.isEmbedded) return;
    await this.dataSource.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<void> {
    if (this.client || this.stopped) return;
    // keep-alive: a listening connection is silent, and a database that vanished must still end it (then it reconnects)
    const client = new Client({
      connectionString: this.endpoint.url,
      application_name: LISTENER_NAME,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
    });
    client.on('notification', (msg) => {
      for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
    });
    client.on('error', (err) => {
      this.logger.warn(`change feed connection lost: ${err.message}; reconnecting`);
      this.client = null;
      setTimeout(() => void this.reconnect(), 1000).unref();
    });
    try {
      await client.connect();
      this.client = client;
    } catch (err) {
      this.logger.warn(`change feed unavailable: ${(err as Error).message}; polling only until it reconnects`);
      setTimeout(() => void this.reconnect(), 1000).unref();
    }
  }

  private async reconnect(): Promise<void> {
    if (this.stopped) return;
    await this.connect();
    for (const channel of this.handlers.keys()) {
      await this.client?.query(`LISTEN "${channel}"`).catch(() => undefined);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
