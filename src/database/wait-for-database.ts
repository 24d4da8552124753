import { Client } from 'pg';

export interface WaitForDatabaseOptions {
  /** Writes one line per failed attempt (and one when the database answers after a wait). */
  log: (line: string) => void;
  /** One connection attempt: resolves once the server answers a query. */
  connect?: (url: string) => Promise<void>;
  sleep?: (ms: number) => Promise<void>;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 5000;

/** Node and PostgreSQL codes of a server that is not there yet, restarting, or full: worth waiting for. */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  '08001',
  '08006',
]);

/** True when the error means the server may answer later (a wrong password or database name never will). */
export function isTransientConnectError(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true;
  return typeof message === 'string' && /Connection terminated|timeout expired|timeout exceeded/i.test(message);
}

/** `host:port/database` of a connection string, never its credentials. */
export function describeDatabase(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

async function connectOnce(url: string): Promise<void> {
  const client = new Client({
    connectionString: url,
    connectionTimeoutMillis: 5000,
    application_name: 'svc-gateway-wait',
  });
  // an error after connect (the server going away) must not crash the process
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Waits, retrying with a growing delay and one log line per attempt, until the database answers.
 * A service started before its database (a fresh `docker compose up`) then starts by itself; an
 * error that waiting cannot fix (authentication, unknown database) stops the boot at once.
 */
export async function waitForDatabase(url: string, options: WaitForDatabaseOptions): Promise<void> {
  const connect = options.connect ?? connectOnce;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const where = describeDatabase(url);
  for (let attempt = 1; ; attempt += 1) {
    try {
      await connect(url);
      if (attempt > 1) options.log(`database at ${where} is reachable (after ${attempt} attempts)`);
      return;
    } catch (err) {
      const reason = (err as Error).message || String(err);
      if (!isTransientConnectError(err)) throw new Error(`Cannot use the database at ${where}: ${reason}`);
      const delay = Math.min(FIRST_DELAY_MS * 2 ** (attempt - 1), MAX_DELAY_MS);
      options.log(
        `waiting for the database at ${where}: ${reason}; retrying in ${delay / 1000} s (attempt ${attempt})`,
      );
      await sleep(delay);
    }
  }
}
