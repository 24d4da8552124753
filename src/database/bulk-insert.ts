/** A column of a bulk INSERT and the PostgreSQL type its parameters are cast to. */
export interface BulkColumn {
  name: string;
  type: 'text' | 'integer' | 'jsonb';
}

/** PostgreSQL's limit on the parameters of one statement. */
const MAX_PARAMETERS = 65535;

/**
 * One INSERT of many rows, a VALUES list with one parameter per value (`INSERT INTO "t" ("a", "b")
 * VALUES ($1::text, $2::jsonb), ($3::text, $4::jsonb)`): what the batch writers send on the pg pool.
 * Cheaper than a repository's insert (no per-row metadata work, no RETURNING), and for the driver
 * than one array parameter per column, which it must escape element by element (about 2 µs per
 * row of JSON here, against 0.1 µs for plain parameters). jsonb values go as JSON text.
 */
export function bulkInsert(table: string, columns: readonly BulkColumn[], rows: ReadonlyArray<readonly unknown[]>): { sql: string; params: unknown[] } {
  if (rows.length * columns.length > MAX_PARAMETERS) {
    throw new Error(`bulk insert of ${rows.length} rows x ${columns.length} columns exceeds PostgreSQL's ${MAX_PARAMETERS} parameters`);
  }
  const params: unknown[] = new Array<unknown>(rows.length * columns.length);
  const tuples: string[] = new Array<string>(rows.length);
  let n = 0;
  for (let r = 0; r < rows.length; r++) {
    const slots: string[] = new Array<string>(columns.length);
    for (let c = 0; c < columns.length; c++) {
      params[n] = rows[r][c];
      n += 1;
      slots[c] = `$${n}::${columns[c].type}`;
    }
    tuples[r] = `(${slots.join(', ')})`;
  }
  const names = columns.map((c) => `"${c.name}"`).join(', ');
  return { sql: `INSERT INTO "${table}" (${names}) VALUES ${tuples.join(', ')}`, params };
}
