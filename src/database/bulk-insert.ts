import { createHash } from 'node:crypto';

/** A column of a bulk INSERT and the PostgreSQL type its value is read as. */
export interface BulkColumn {
  name: string;
  type: 'text' | 'integer' | 'jsonb';
}

/** A statement as the pg driver takes it; with a `name`, it is parsed and planned once per connection. */
export interface BulkQuery {
  name: string;
  text: string;
  values: [string];
}

/** One INSERT statement for many rows: the same text for every batch, one parameter. */
export interface BulkInsert {
  sql: string;
  /** The parameters of a batch of rows, each row's values in column order (jsonb values as plain JS values). */
  params(rows: ReadonlyArray<readonly unknown[]>): [string];
  /** The batch as a named (prepared) statement: PostgreSQL skips parsing and planning after a connection's first batch. */
  query(rows: ReadonlyArray<readonly unknown[]>): BulkQuery;
}

const valueOf = (column: BulkColumn, index: number): string => {
  switch (column.type) {
    case 'text':
      return `e->>${index}`;
    case 'integer':
      return `(e->>${index})::integer`;
    case 'jsonb':
      // a JSON null element is SQL NULL, as a null parameter was
      return `nullif(e->${index}, 'null'::jsonb)`;
  }
};

/**
 * The batch writers' INSERT (`INSERT INTO "t" ("a", "b") SELECT e->>0, nullif(e->1, 'null') FROM
 * jsonb_array_elements($1::jsonb) AS e`): the rows go as one JSON array of arrays, so the driver
 * serialises one parameter per batch instead of one per value (what a VALUES list needed), and the
 * statement text is the same whatever the batch size, with no limit of 65535 parameters.
 */
export function bulkInsert(table: string, columns: readonly BulkColumn[]): BulkInsert {
  const names = columns.map((c) => `"${c.name}"`).join(', ');
  const values = columns.map(valueOf).join(', ');
  const sql = `INSERT INTO "${table}" (${names}) SELECT ${values} FROM jsonb_array_elements($1::jsonb) AS e`;
  const params = (rows: ReadonlyArray<readonly unknown[]>): [string] => [JSON.stringify(rows)];
  // one name per table and column list (the driver refuses one name for two texts on a connection)
  const name = `bulk_insert_${table}_${createHash('sha1').update(sql).digest('hex').slice(0, 12)}`;
  return { sql, params, query: (rows) => ({ name, text: sql, values: params(rows) }) };
}

/** PostgreSQL's data exceptions (class 22) and integrity violations (class 23): the rows, not the database, are at fault. */
export function isRowFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

export type RunQuery = (query: BulkQuery) => Promise<unknown>;

/** A row the database refused, by its index in the batch. */
export interface RefusedRow {
  index: number;
  error: Error;
}

/** What became of a batch: rows before `processed` were written or refused; from `error` on, none were tried. */
export interface BatchOutcome {
  processed: number;
  refused: RefusedRow[];
  /** Why the rest was not written (the database is away): they are the caller's to retry. */
  error?: Error;
}

/**
 * Inserts a batch in one statement (`whole`, default the INSERT; a writer may pass a COPY of the same rows).
 * When the database refuses the rows themselves (class 22 or 23) the batch is retried row by row with the
 * INSERT, so one bad row does not keep the others out for ever.
 */
export async function insertBatch(
  run: RunQuery,
  insert: BulkInsert,
  rows: ReadonlyArray<readonly unknown[]>,
  whole: (rows: ReadonlyArray<readonly unknown[]>) => Promise<unknown> = (all) => run(insert.query(all)),
): Promise<BatchOutcome> {
  try {
    await whole(rows);
    return { processed: rows.length, refused: [] };
  } catch (err) {
    if (!isRowFault(err)) return { processed: 0, refused: [], error: err as Error };
    if (rows.length === 1) return { processed: 1, refused: [{ index: 0, error: err as Error }] };
  }
  const refused: RefusedRow[] = [];
  for (let index = 0; index < rows.length; index++) {
    try {
      await run(insert.query([rows[index]]));
    } catch (err) {
      if (!isRowFault(err)) return { processed: index, refused, error: err as Error };
      refused.push({ index, error: err as Error });
    }
  }
  return { processed: rows.length, refused };
}
