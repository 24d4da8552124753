import type { Pool } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { BulkColumn } from './bulk-insert';
import { isRowFault } from './bulk-insert';

/** The characters COPY's text format gives a meaning to inside a value: backslash, newline, carriage return, tab. */
const SPECIAL = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A value as COPY's text format reads it literally. */
export const copyText = (value: string): string =>
  SPECIAL.test(value) ? value.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c]) : value;

const NULL = '\\N';

/** A value as the INSERT's `e->>i` reads it: a string as it is, anything else as its JSON text. */
const asText = (value: unknown): string => copyText(typeof value === 'string' ? value : JSON.stringify(value));

const fieldOf = (column: BulkColumn, value: unknown): string => {
  if (value === null || value === undefined) return NULL;
  switch (column.type) {
    case 'text':
      return asText(value);
    case 'integer':
      return typeof value === 'number' ? String(value) : asText(value);
    case 'jsonb':
      // the JSON text as PostgreSQL parses it into jsonb; a null value is SQL NULL, as in the INSERT
      return copyText(JSON.stringify(value));
  }
};

/** One `COPY … FROM STDIN` (text format) for many rows: the columns, and the text of a batch. */
export interface BulkCopy {
  sql: string;
  /** A batch's rows, each row's values in column order (jsonb values as plain JS values), as COPY's text format. */
  text(rows: ReadonlyArray<readonly unknown[]>): string;
}

/**
 * The batch writers' fastest way in on a PostgreSQL server: COPY parses tab-separated text straight into rows,
 * where `INSERT … SELECT FROM jsonb_array_elements($1)` builds a jsonb document and reads every field out of it
 * (bench:usage-write: about a quarter less of the server's CPU a row, and less work for the client). The embedded
 * database (PGlite) has no COPY over its socket, so its writers keep the INSERT.
 */
export function bulkCopy(table: string, columns: readonly BulkColumn[]): BulkCopy {
  const sql = `COPY "${table}" (${columns.map((c) => `"${c.name}"`).join(', ')}) FROM STDIN`;
  const text = (rows: ReadonlyArray<readonly unknown[]>): string => {
    let out = '';
    for (const row of rows) {
      for (let i = 0; i < columns.length; i++) out += (i > 0 ? '\t' : '') + fieldOf(columns[i], row[i]);
      out += '\n';
    }
    return out;
  };
  return { sql, text };
}

/**
 * Writes `rows` in one COPY on a connection of `pool`, under the pool's deadlines (the server's statement_timeout,
 * pg's query_timeout). A refusal of the rows (class 22 or 23: see isRowFault) rejects with the database's error
 * and leaves the connection in the pool; any other failure, a deadline included, closes the connection.
 */
export async function copyRows(pool: Pool, copy: BulkCopy, rows: ReadonlyArray<readonly unknown[]>): Promise<void> {
  const data = copy.text(rows);
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const stream = client.query(copyFrom(copy.sql));
    await new Promise<void>((resolve, reject) => {
      stream.once('finish', resolve);
      // kept after the first (a second error, as the connection closes, would otherwise be unhandled)
      stream.on('error', reject);
      stream.end(data);
    });
  } catch (err) {
    if (!isRowFault(err)) broken = err as Error;
    throw err;
  } finally {
    // a connection whose COPY failed other than on its rows (or did not answer in time) is closed, not reused
    client.release(broken);
  }
}
