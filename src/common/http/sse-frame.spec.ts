import { jsonWithProvider, rawJsonOf, sseChunkFrame, withRawJson } from './sse-frame';

const parsed = (text: string): object => withRawJson(JSON.parse(text) as object, text);
/** What the frame's JSON means, whichever way it was made. */
const meaning = (frame: string): unknown => {
  expect(frame.startsWith('data: ')).toBe(true);
  expect(frame.endsWith('\n\n')).toBe(true);
  expect(frame.slice(6, -2)).not.toMatch(/[\r\n]/);
  return JSON.parse(frame.slice(6, -2));
};

describe('sseChunkFrame', () => {
  it('appends the provider to the kept upstream text, meaning what stringifying the copy meant', () => {
    const text =
      '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hé \\u2028"}}]}';
    const chunk = parsed(text);
    const frame = sseChunkFrame(chunk, 'primary');
    expect(frame).toBe(`data: ${text.slice(0, -1)},"provider":"primary"}\n\n`);
    expect(meaning(frame)).toEqual({ ...JSON.parse(text), provider: 'primary' });
  });

  it('frames an empty object and escapes the provider name', () => {
    expect(sseChunkFrame(parsed('{ }'), 'a"b')).toBe('data: {"provider":"a\\"b"}\n\n');
  });

  it('serialises the object when no text was kept, or the text cannot take the field', () => {
    expect(sseChunkFrame({ id: 'x' }, 'p')).toBe('data: {"id":"x","provider":"p"}\n\n');
    // the upstream's own provider field is replaced, as the spread did
    const own = parsed('{"id":"x","provider":"openrouter-upstream"}');
    expect(meaning(sseChunkFrame(own, 'p'))).toEqual({ id: 'x', provider: 'p' });
    // a multi-line data event must not break the SSE framing
    const multiLine = withRawJson({ id: 'x' }, '{"id":\n"x"}');
    expect(sseChunkFrame(multiLine, 'p')).toBe('data: {"id":"x","provider":"p"}\n\n');
    const notObject = withRawJson({ id: 'x' }, '[1]');
    expect(sseChunkFrame(notObject, 'p')).toBe('data: {"id":"x","provider":"p"}\n\n');
  });

  it('keeps the text out of JSON.stringify and out of a copy (which may be changed)', () => {
    const chunk = parsed('{"id":"x"}');
    expect(rawJsonOf(chunk)).toBe('{"id":"x"}');
    expect(JSON.stringify(chunk)).toBe('{"id":"x"}');
    const copy = { ...chunk, id: 'y' };
    expect(rawJsonOf(copy)).toBeUndefined();
    expect(sseChunkFrame(copy, 'p')).toBe('data: {"id":"y","provider":"p"}\n\n');
  });
});

describe('jsonWithProvider', () => {
  it('appends the provider to a kept body, surrounding white space and line breaks included', () => {
    const text = '{\n  "id": "c1",\n  "choices": []\n}\n';
    const body = jsonWithProvider(parsed(text), 'primary');
    expect(body).toBe('{\n  "id": "c1",\n  "choices": []\n,"provider":"primary"}');
    expect(JSON.parse(body)).toEqual({ id: 'c1', choices: [], provider: 'primary' });
  });

  it('serialises the copy when the text cannot take the field', () => {
    expect(jsonWithProvider({ id: 'x' }, 'p')).toBe('{"id":"x","provider":"p"}');
    expect(JSON.parse(jsonWithProvider(parsed('{"id":"x","provider":"up"}'), 'p'))).toEqual({ id: 'x', provider: 'p' });
    expect(jsonWithProvider(withRawJson({ id: 'x' }, '[1]'), 'p')).toBe('{"id":"x","provider":"p"}');
  });
});
