import fs from 'node:fs';

/**
 * Everything the process writes to stdout and stderr through `fs.write` / `fs.writeSync` (pino's destination) while
 * capturing, kept instead of printed: what a test reads to show a secret never reaches a log line.
 */
export class LogCapture {
  private readonly parts: string[] = [];
  private readonly original = { write: fs.write, writeSync: fs.writeSync };

  start(): this {
    const keep = (fd: unknown, data: unknown): number | null => {
      if (fd !== 1 && fd !== 2) return null;
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : String(data);
      this.parts.push(text);
      return Buffer.byteLength(text);
    };
    const { write, writeSync } = this.original;
    const patched = fs as unknown as Record<'write' | 'writeSync', (...args: unknown[]) => unknown>;
    patched.write = (...args: unknown[]): unknown => {
      const n = keep(args[0], args[1]);
      if (n === null) return (write as (...a: unknown[]) => unknown)(...args);
      const callback = args[args.length - 1] as (err: Error | null, written: number) => void;
      process.nextTick(() => callback(null, n));
      return undefined;
    };
    patched.writeSync = (...args: unknown[]): unknown =>
      keep(args[0], args[1]) ?? (writeSync as (...a: unknown[]) => unknown)(...args);
    return this;
  }

  stop(): void {
    Object.assign(fs, this.original);
  }

  get text(): string {
    return this.parts.join('');
  }
}
