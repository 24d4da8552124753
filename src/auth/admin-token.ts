import { timingSafeEqual, createHash } from 'node:crypto';
import { randomBase62 } from '../common/ids';

/** The operator's bearer token; null means the admin API is off. */
export class AdminToken {
  constructor(
    readonly value: string | null,
    /** True when this process made the token up (embedded demo start) and should print it. */
    readonly generated: boolean,
  ) {}

  static fromEnvironment(configured: string | undefined, embedded: boolean): AdminToken {
    if (configured) return new AdminToken(configured, false);
    return embedded ? new AdminToken(`adm-${randomBase62(32)}`, true) : new AdminToken(null, false);
  }

  /** Constant-time comparison (of digests, so the lengths are equal too). */
  matches(candidate: string): boolean {
    if (!this.value) return false;
    const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
    return timingSafeEqual(digest(candidate), digest(this.value));
  }
}
