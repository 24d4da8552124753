import { bulkInsert } from './bulk-insert';

describe('bulkInsert', () => {
  const columns = [
    { name: 'id', type: 'text' },
    { name: 'n', type: 'integer' },
    { name: 'data', type: 'jsonb' },
  ] as const;

  it('makes one VALUES tuple per row with a cast parameter per value, in row order', () => {
    const { sql, params } = bulkInsert('things', columns, [
      ['a', 1, '{"x":1}'],
      ['b', null, '{}'],
    ]);
    expect(sql).toBe('INSERT INTO "things" ("id", "n", "data") VALUES ($1::text, $2::integer, $3::jsonb), ($4::text, $5::integer, $6::jsonb)');
    expect(params).toEqual(['a', 1, '{"x":1}', 'b', null, '{}']);
  });

  it("refuses a batch beyond PostgreSQL's 65535 parameters instead of sending it", () => {
    const rows = Array.from({ length: 21846 }, (_, i) => [`id${i}`, i, '{}']);
    expect(() => bulkInsert('things', columns, rows)).toThrow(/exceeds PostgreSQL's 65535 parameters/);
    expect(bulkInsert('things', columns, rows.slice(0, 21845)).params).toHaveLength(65535);
  });
});
