import { bulkCopy, copyText } from './bulk-copy';

describe('COPY text format of a batch', () => {
  const copy = bulkCopy('things', [
    { name: 'id', type: 'text' },
    { name: 'n', type: 'integer' },
    { name: 'data', type: 'jsonb' },
  ]);

  it('names the table and columns quoted, reading from STDIN', () => {
    expect(copy.sql).toBe('COPY "things" ("id", "n", "data") FROM STDIN');
  });

  it('writes one line a row, fields split by tabs, null and undefined as \\N, a JSON null as SQL NULL', () => {
    expect(
      copy.text([
        ['a', 1, { k: [1, 'two'] }],
        ['b', null, null],
        ['c', undefined, undefined],
      ]),
    ).toBe('a\t1\t{"k":[1,"two"]}\nb\t\\N\t\\N\nc\t\\N\t\\N\n');
  });

  it('escapes the characters the format gives a meaning to, in text and in JSON alike', () => {
    expect(copyText('plain "quoted" ünïcødé')).toBe('plain "quoted" ünïcødé');
    expect(copyText('tab\there\nnew\rline \\ slash \\N')).toBe('tab\\there\\nnew\\rline \\\\ slash \\\\N');
    // JSON.stringify has already turned a newline into the two characters \n: its backslash is doubled
    expect(copy.text([['x', 2, { s: 'a\nb\t"c"\\' }]])).toBe('x\t2\t{"s":"a\\\\nb\\\\t\\\\"c\\\\"\\\\\\\\"}\n');
  });

  it('writes a non-string value of a text column as its string', () => {
    expect(copy.text([[42, 7, 'str']])).toBe('42\t7\t"str"\n');
  });
});
