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
