import type { BatchOutcome } from '../database/bulk-insert';
import type { NewUsageRecord, UsageRecordsRepository } from './usage-records.repository';
import { UsageWriter } from './usage.writer';

const record = (requestId: string): NewUsageRecord => ({
  requestId,
  keyId: 'key_1',
  capability: 'chat',
  requestedModel: 'm',
  provider: 'primary',
  model: 'm',
  fallbackLevel: 0,
  status: 200,
  latencyMs: 1,
  attempts: [],
  promptTokens: null,
  completionTokens: null,
  totalTokens: null,
  characters: null,
});

/** A repository whose INSERTs finish when the test says so; it remembers each batch's request ids. */
function heldRepository(): { repo: UsageRecordsRepository; batches: string[][]; finish(): void } {
  const batches: string[][] = [];
  const waiting: Array<() => void> = [];
  const repo = {
    insert: (batch: NewUsageRecord[]): Promise<BatchOutcome> => {
      batches.push(batch.map((r) => r.requestId));
      return new Promise((resolve) => waiting.push(() => resolve({ processed: batch.length, refused: [] })));
    },
  } as unknown as UsageRecordsRepository;
  return { repo, batches, finish: () => waiting.shift()?.() };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('UsageWriter', () => {
  it('writes what was buffered when a flush starts; records added during its INSERT wait for the next flush', async () => {
    const held = heldRepository();
    const writer = new UsageWriter(held.repo);
    writer.add(record('a'));
    writer.add(record('b'));
    const first = writer.flush();
    await turn();
    expect(held.batches).toEqual([['a', 'b']]);
    // arrives while the INSERT is in flight: not a second INSERT as soon as the first one ends
    writer.add(record('c'));
    held.finish();
    await first;
    await turn();
    expect(held.batches).toEqual([['a', 'b']]);
    // the next flush (the writer's tick) takes it
    const second = writer.flush();
    await turn();
    expect(held.batches).toEqual([['a', 'b'], ['c']]);
    held.finish();
    await second;
  });

  it('a flush asked for during an INSERT still writes every record buffered when it was asked for', async () => {
    const held = heldRepository();
    const writer = new UsageWriter(held.repo);
    writer.add(record('a'));
    const first = writer.flush();
    await turn();
    writer.add(record('b'));
    const second = writer.flush();
    held.finish();
    await first;
    await turn();
    expect(held.batches).toEqual([['a'], ['b']]);
    held.finish();
    await second;
  });

  it('rows an INSERT is writing do not count towards the next full batch', async () => {
    const held = heldRepository();
    const writer = new UsageWriter(held.repo);
    for (let i = 0; i < 500; i++) writer.add(record(`r${i}`));
    await turn();
    expect(held.batches.map((b) => b.length)).toEqual([500]);
    // 500 in flight and one more buffered: not a full batch, so no one-row INSERT right after this one
    writer.add(record('late'));
    held.finish();
    await turn();
    expect(held.batches.map((b) => b.length)).toEqual([500]);
    const next = writer.flush();
    await turn();
    expect(held.batches.map((b) => b.length)).toEqual([500, 1]);
    held.finish();
    await next;
  });

  it('a full batch is written at once, and a large backlog goes in batches of 500', async () => {
    const held = heldRepository();
    const writer = new UsageWriter(held.repo);
    for (let i = 0; i < 499; i++) writer.add(record(`r${i}`));
    await turn();
    expect(held.batches).toHaveLength(0);
    writer.add(record('r499'));
    await turn();
    expect(held.batches.map((b) => b.length)).toEqual([500]);
    for (let i = 500; i < 1250; i++) writer.add(record(`r${i}`));
    held.finish();
    await turn();
    // the 750 added meanwhile: the flush asked for at 1,000 buffered writes what it found then, 500 at a time
    expect(held.batches.map((b) => b.length)).toEqual([500, 500]);
    held.finish();
    await turn();
    expect(held.batches.map((b) => b.length)).toEqual([500, 500, 250]);
    held.finish();
    await writer.flush();
    expect(held.batches.flat()).toEqual(Array.from({ length: 1250 }, (_, i) => `r${i}`));
  });

  it('when the buffer is full it drops the oldest record not being written, so a write that ends part-way loses nothing else', async () => {
    const batches: string[][] = [];
    let end: (outcome: BatchOutcome) => void = () => undefined;
    let held = true;
    const repo = {
      insert: (batch: NewUsageRecord[]): Promise<BatchOutcome> => {
        batches.push(batch.map((r) => r.requestId));
        if (!held) return Promise.resolve({ processed: batch.length, refused: [] });
        return new Promise((resolve) => (end = resolve));
      },
    } as unknown as UsageRecordsRepository;
    const writer = new UsageWriter(repo);
    (writer as unknown as { logger: { error(): void; warn(): void } }).logger = {
      error: () => undefined,
      warn: () => undefined,
    };
    for (let i = 0; i < 50_000; i++) writer.add(record(`r${i}`));
    await turn();
    expect(batches.map((b) => b[0])).toEqual(['r0']);
    // full: r500 is the oldest not in the write (r0 to r499 are)
    writer.add(record('over'));
    // the database went away after 200 of the 500 rows
    end({ processed: 200, refused: [], error: new Error('connection lost') });
    await turn();
    expect(batches[1].slice(0, 301)).toEqual([...Array.from({ length: 300 }, (_, i) => `r${200 + i}`), 'r501']);
    held = false;
    end({ processed: batches[1].length, refused: [] });
    await writer.flush();
    expect(batches.flat().filter((id) => id === 'r500')).toEqual([]);
    expect(new Set(batches.slice(1).flat()).size).toBe(50_000 - 200);
  });
});
