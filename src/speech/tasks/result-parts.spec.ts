import { PartWriter } from './result-parts';

describe('PartWriter', () => {
  it('cuts any sequence of writes into equal parts in order, the last shorter, losing nothing', async () => {
    const saved: Array<[number, Buffer]> = [];
    const writer = new PartWriter((part, data) => {
      saved.push([part, data]);
      return Promise.resolve();
    }, 10);
    const input = Buffer.from(Array.from({ length: 47 }, (_, i) => i));
    for (const [from, to] of [
      [0, 3],
      [3, 3],
      [3, 25],
      [25, 26],
      [26, 47],
    ])
      await writer.write(input.subarray(from, to));
    await writer.close();
    expect(saved.map(([part]) => part)).toEqual([0, 1, 2, 3, 4]);
    expect(saved.map(([, data]) => data.length)).toEqual([10, 10, 10, 10, 7]);
    expect(Buffer.concat(saved.map(([, data]) => data))).toEqual(input);
    expect(writer.total).toBe(47);
    expect(writer.parts).toBe(5);
  });

  it('writes nothing for an empty file', async () => {
    const save = jest.fn(() => Promise.resolve());
    const writer = new PartWriter(save, 10);
    await writer.write(Buffer.alloc(0));
    await writer.close();
    expect(save).not.toHaveBeenCalled();
    expect(writer.total).toBe(0);
  });
});
