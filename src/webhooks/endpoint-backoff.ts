/** Consecutive timed-out attempts after which an endpoint is backed off on its own (decisions §11). */
export const TIMEOUTS_BEFORE_BACKOFF = 3;
const FIRST_BACKOFF_SECONDS = 60;
const MAX_BACKOFF_SECONDS = 3600;

/**
 * Seconds an endpoint's deliveries wait after its `timeouts`-th timeout in a row, or null when it is not
 * backed off: a minute after the third, doubling with each probe that times out again, at most an hour.
 * Waiting deliveries are not attempted, so the backoff spends none of their retry schedule.
 */
export function endpointBackoffSeconds(timeouts: number): number | null {
  if (timeouts < TIMEOUTS_BEFORE_BACKOFF) return null;
  return Math.min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** (timeouts - TIMEOUTS_BEFORE_BACKOFF));
}
