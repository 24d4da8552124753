/** Size of one stored part of a finished file: large enough for few rows, small enough to hold in memory. */
export const PART_BYTES = 1024 * 1024;

/** Cuts a stream of encoded bytes into numbered parts of exactly `partBytes` (the last may be shorter). */
export class PartWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private nextPart = 0;
  private written = 0;

  constructor(
    private readonly save: (part: number, data: Buffer) => Promise<void>,
    private readonly partBytes = PART_BYTES,
  ) {}

  /** Bytes handed to `save` so far. */
  get total(): number {
    return this.written;
  }

  get parts(): number {
    return this.nextPart;
  }

  async write(bytes: Buffer): Promise<void> {
    if (bytes.length === 0) return;
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    while (this.pendingBytes >= this.partBytes) {
      const all = Buffer.concat(this.pending);
      await this.emit(all.subarray(0, this.partBytes));
      const rest = all.subarray(this.partBytes);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
    }
  }

  /** Saves what is left as the last part. */
  async close(): Promise<void> {
    if (this.pendingBytes > 0) await this.emit(Buffer.concat(this.pending));
    this.pending = [];
    this.pendingBytes = 0;
  }

  private async emit(data: Buffer): Promise<void> {
    // a copy: the slice would otherwise keep the whole concatenation alive
    await this.save(this.nextPart, Buffer.from(data));
    this.nextPart += 1;
    this.written += data.length;
  }
}
