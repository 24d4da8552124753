import { bulkInsert, insertBatch, isRowFault } from './bulk-insert';
import type { BulkQuery } from './bulk-insert';

const columns = [
  { name: 'id', type: 'text' },
  { name: 'n', type: 'integer' },
  { name: 'data', type: 'jsonb' },
] as const;

const fault = (code: string): Error => Object.assign(new Error(`pg ${code}`), { code });

describe('bulkInsert', () => {
  it('reads every column from one JSON array parameter, with the column casts', () => {
    const insert = bulkInsert('things', columns);
    expect(insert.sql).toBe(
      `INSERT INTO "things" ("id", "n", "data") SELECT e->>0, (e->>1)::integer, nullif(e->2, 'null'::jsonb) FROM jsonb_array_elements($1::jsonb) AS e`,
    );
    expect(
      insert.params([
        ['a', 1, { x: 1 }],
        ['b', null, null],
      ]),
    ).toEqual(['[["a",1,{"x":1}],["b",null,null]]']);
  });

  it('names the statement (prepared once per connection), one name per table and column list', () => {
    const query = bulkInsert('things', columns).query([['a', 1, null]]);
    expect(query).toEqual({
      name: expect.stringMatching(/^bulk_insert_things_[0-9a-f]{12}$/),
      text: bulkInsert('things', columns).sql,
      values: ['[["a",1,null]]'],
    });
    expect(bulkInsert('things', columns).query([]).name).toBe(query.name);
    expect(bulkInsert('things', columns.slice(0, 2)).query([]).name).not.toBe(query.name);
    expect(bulkInsert('others', columns).query([]).name).not.toBe(query.name);
  });
});

describe('insertBatch', () => {
  const insert = bulkInsert('things', columns);
  const rows = [
    ['a', 1, {}],
    ['b', 2, {}],
    ['c', 3, {}],
  ];
  /** A fake database: `refuse` ids fail with a data exception, `down` from the call of that number on. */
  const database = (refuse: string[], downFromCall = Infinity) => {
    const calls: string[][] = [];
    const run = ({ values: [json] }: BulkQuery): Promise<unknown> => {
      const ids = (JSON.parse(json) as Array<[string]>).map(([id]) => id);
      calls.push(ids);
      if (calls.length >= downFromCall) return Promise.reject(fault('57P01'));
      return ids.some((id) => refuse.includes(id)) ? Promise.reject(fault('22003')) : Promise.resolve();
    };
    return { run, calls };
  };

  it('writes a good batch in one statement', async () => {
    const db = database([]);
    await expect(insertBatch(db.run, insert, rows)).resolves.toEqual({ processed: 3, refused: [] });
    expect(db.calls).toEqual([['a', 'b', 'c']]);
  });

  it('retries a batch the database refuses row by row, and returns only the refused rows', async () => {
    const db = database(['b']);
    const outcome = await insertBatch(db.run, insert, rows);
    expect(outcome.processed).toBe(3);
    expect(outcome.refused.map((r) => r.index)).toEqual([1]);
    expect(outcome.error).toBeUndefined();
    expect(db.calls).toEqual([['a', 'b', 'c'], ['a'], ['b'], ['c']]);
  });

  it('stops where the database went away, so the caller retries only the rows not yet written', async () => {
    const db = database(['a'], 4);
    const outcome = await insertBatch(db.run, insert, rows);
    expect(outcome).toMatchObject({ processed: 2, refused: [{ index: 0 }] });
    expect(outcome.error?.message).toBe('pg 57P01');
  });

  it('leaves the whole batch to the caller when the database is away', async () => {
    const db = database([], 1);
    const outcome = await insertBatch(db.run, insert, rows);
    expect(outcome).toMatchObject({ processed: 0, refused: [] });
    expect(outcome.error).toBeDefined();
  });

  it('counts data exceptions and integrity violations as the rows fault, nothing else', () => {
    expect(
      [fault('22P02'), fault('23505'), fault('57P01'), fault('08006'), new Error('x'), null].map(isRowFault),
    ).toEqual([true, true, false, false, false, false]);
  });
});
