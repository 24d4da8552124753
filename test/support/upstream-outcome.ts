import type { UpstreamOutcome } from '../../src/providers/provider-adapter';
import { UpstreamFailure } from '../../src/providers/provider-adapter';

/** The outcome an adapter call failed with; fails the test if it succeeds or throws anything else. */
export async function outcomeOf(action: () => Promise<unknown>): Promise<UpstreamOutcome> {
  try {
    await action();
  } catch (err) {
    if (err instanceof UpstreamFailure) return err.outcome;
    throw err;
  }
  throw new Error('expected an UpstreamFailure');
}

/** The chunks an iterator hands out until it ends, and what it failed with, if anything (null when it ended). */
export async function collectChunks<T>(chunks: AsyncIterator<T>): Promise<{ values: T[]; error: unknown }> {
  const values: T[] = [];
  try {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) values.push(next.value);
    return { values, error: null };
  } catch (error) {
    return { values, error };
  }
}
