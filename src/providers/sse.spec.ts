import { Readable } from 'node:stream';
import { UpstreamFailure } from './provider-adapter';
import { SseParser, sseEvents } from './sse';

const all = (parser: SseParser, chunks: string[]): Array<{ event: string; data: string }> =>
  chunks.flatMap((c) => parser.push(Buffer.from(c)));

describe('SseParser', () => {
  it('parses events split anywhere, with LF, CRLF and CR line ends, comments and multi-line data', () => {
    const text = ': hi\r\ndata: {"a":1}\r\n\r\nevent: ping\rdata: x\rdata:y\r\rdata: é\n\n';
    const expected = [
      { event: 'message', data: '{"a":1}' },
      { event: 'ping', data: 'x\ny' },
      { event: 'message', data: 'é' },
    ];
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const parser = new SseParser();
      expect([...parser.push(bytes.subarray(0, cut)), ...parser.push(bytes.subarray(cut))]).toEqual(expected);
    }
    // one byte at a time (a CR at the end of one chunk, its LF in the next)
    const parser = new SseParser();
    expect([...bytes].flatMap((b) => parser.push(Buffer.from([b])))).toEqual(expected);
  });

  it('gives back random events, whatever their line ends and however the bytes are cut', () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const ends = ['\n', '\r\n', '\r'];
    // a CR then an LF is one line end (CRLF): after a lone CR the next end is not a lone LF
    let previous = '';
    const end = (): string => (previous = previous === '\r' ? ends[1 + random(2)] : ends[random(3)]);
    for (let round = 0; round < 200; round++) {
      const expected: Array<{ event: string; data: string }> = [];
      let text = '';
      for (let e = random(6); e >= 0; e--) {
        const lines = Array.from({ length: 1 + random(3) }, () => 'x'.repeat(random(40)) + 'é{}:'.slice(0, random(5)));
        const name = random(3) === 0 ? 'ping' : '';
        if (name) text += `event: ${name}${end()}`;
        for (const line of lines) text += `data: ${line}${end()}`;
        if (random(4) === 0) text += `: a comment${end()}`;
        text += end();
        expected.push({ event: name || 'message', data: lines.join('\n') });
      }
      const bytes = Buffer.from(text);
      const parser = new SseParser();
      const got: Array<{ event: string; data: string }> = [];
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + random(30);
        got.push(...parser.push(bytes.subarray(at, at + size)));
        at += size;
      }
      expect(got).toEqual(expected);
    }
  });

  it('drops a byte-order mark at the start of the stream only, even split across reads', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('data: \ufeffa\n\n')]);
    for (let cut = 0; cut <= 3; cut++) {
      const parser = new SseParser();
      expect([...parser.push(bytes.subarray(0, cut)), ...parser.push(bytes.subarray(cut))]).toEqual([
        { event: 'message', data: '\ufeffa' },
      ]);
    }
  });

  it('returns several events of one read at once, and the unclosed event at the end', () => {
    const parser = new SseParser();
    expect(all(parser, ['data: 1\n\ndata: 2\n\ndata: 3\n'])).toEqual([
      { event: 'message', data: '1' },
      { event: 'message', data: '2' },
    ]);
    expect(parser.finish()).toEqual({ event: 'message', data: '3' });
    expect(parser.finish()).toBeUndefined();
  });

  it('refuses a line or an event over the cap', () => {
    expect(() => new SseParser(8).push('data: 0123456789')).toThrow(UpstreamFailure);
    const parser = new SseParser(10);
    parser.push('data: 1234\ndata: 1234\n');
    expect(() => parser.push('data: 1234\n')).toThrow(UpstreamFailure);
  });

  it('sseEvents yields the same events from an async source', async () => {
    const events = [];
    for await (const event of sseEvents(Readable.from(['data: a\n', '\ndata: b\n']))) events.push(event);
    expect(events).toEqual([
      { event: 'message', data: 'a' },
      { event: 'message', data: 'b' },
    ]);
  });
});
