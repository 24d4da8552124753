import { isUnstorableText, storableText } from './storable-text';

describe('storableText', () => {
  it('replaces NUL and unpaired surrogates with U+FFFD and keeps everything else', () => {
    expect(storableText('O\0K\0')).toBe('O\uFFFDK\uFFFD');
    expect(storableText('a\uD800b\uDC00c')).toBe('a\uFFFDb\uFFFDc');
    expect(storableText('end\uD83D')).toBe('end\uFFFD');
    expect(storableText('ok 😀 é \u0001')).toBe('ok 😀 é \u0001');
  });
});

describe('isUnstorableText', () => {
  it('recognises the codes PostgreSQL uses for text it refuses, and nothing else', () => {
    expect(isUnstorableText({ code: '22021' })).toBe(true);
    expect(isUnstorableText({ code: '22P05' })).toBe(true);
    expect(isUnstorableText({ code: '23505' })).toBe(false);
    expect(isUnstorableText(new Error('connection terminated'))).toBe(false);
    expect(isUnstorableText(null)).toBe(false);
  });
});
