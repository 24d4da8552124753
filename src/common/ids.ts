import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes are drawn from a pool refilled 4 KiB at a time (one CSPRNG call per ~100 ids, as randomUUID does). */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let next = 0;

/** Uniform random base62 string (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (next >= pool.length) {
      pool = randomBytes(POOL_BYTES);
      next = 0;
    }
    const byte = pool[next++];
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

export const newId = (prefix: string, length = 24): string => `${prefix}_${randomBase62(length)}`;

export const newRequestId = (): string => newId('req', 20);
