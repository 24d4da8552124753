import type { Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { CLIENT_GRACE_MS } from './typeorm-options';

/**
 * The deadline of maintenance statements (retention deletes, the job queue's archiving): off the
 * request path and possibly long after a backlog, so not held to the request paths' deadline.
 */
export const MAINTENANCE_TIMEOUT_MS = 5 * 60_000;

/** Runs one statement in a transaction of its own whose statement deadline is `timeoutMs` instead of the pool's. */
export async function maintenanceQuery<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: unknown[],
  timeoutMs = MAINTENANCE_TIMEOUT_MS,
): Promise<QueryResult<R>> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
    const result = await client.query<R>(withClientDeadline({ text, values }, timeoutMs));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    failure = err as Error;
    throw err;
  } finally {
    // a connection whose statement failed (or timed out on the client) is closed, not reused
    client.release(failure);
  }
}

/** The config with pg's per-query client deadline (`query_timeout`, which the type definitions leave out). */
export function withClientDeadline(config: QueryConfig, timeoutMs: number): QueryConfig {
  const withDeadline: QueryConfig & { query_timeout: number } = {
    ...config,
    query_timeout: timeoutMs + CLIENT_GRACE_MS,
  };
  return withDeadline;
}

/**
 * A statement text without parameters wrapped so it runs under `timeoutMs` (a multi-statement simple
 * query is one transaction: the SET is undone with it when it fails, and RESET restores it otherwise).
 * Its own results sit between the SET's and the RESET's.
 */
export function withMaintenanceDeadline(text: string, timeoutMs = MAINTENANCE_TIMEOUT_MS): string {
  return `SET statement_timeout = ${Math.floor(timeoutMs)};\n${text};\nRESET statement_timeout`;
}
