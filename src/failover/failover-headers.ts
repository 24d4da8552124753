import { NO_PROVIDER } from '../metrics/request-counter';
import { alertMessage } from './chain';

/** Who served a request, and what failed before it. */
export interface ServedBy {
  provider: string;
  model: string;
  level: number;
  /** The last step that failed (or was skipped) before the serving one; null when the entry step served. */
  exhausted: { provider: string; reason: string } | null;
  /** Upstream attempts made before the answer's headers (`x-svc-attempts`, decisions §3); retries included. */
  attempts: number;
}

export interface FallbackAlert {
  message: string;
  exhausted_provider: string;
  /** `none` when no step served (every one failed or was skipped): the field is always a string (decisions §4). */
  active_provider: string;
  fallback_level: number;
}

/** `note` adds what else the fallback changed (e.g. the voice it spoke with instead of a custom one); a header holds only printable ASCII. */
export const alertFor = (served: ServedBy, note: string | null = null): FallbackAlert | null =>
  served.exhausted
    ? {
        message:
          alertMessage(served.exhausted.provider, served.exhausted.reason, served.provider, served.level) +
          (note ? `; ${note.replace(/[^\x20-\x7e]/g, '?')}` : ''),
        exhausted_provider: served.exhausted.provider,
        active_provider: served.provider,
        fallback_level: served.level,
      }
    : null;

/** A response's headers as name/value pairs, shared between the requests that get the same ones: never change one. */
export type HeaderPairs = ReadonlyArray<readonly [string, string]>;

/** Distinct served-header sets kept at most (providers x levels x reasons x notes); past it the cache starts over. */
const SERVED_HEADERS_CACHED = 1024;

/** One level of the cache: the set that ends here, and the next level by the next field's value. */
interface CacheNode {
  pairs?: HeaderPairs;
  next?: Map<string | number, CacheNode>;
}

let cacheRoot: CacheNode = {};
let cachedSets = 0;

function below(node: CacheNode, value: string | number): CacheNode {
  const next = (node.next ??= new Map<string | number, CacheNode>());
  let child = next.get(value);
  if (!child) {
    child = {};
    next.set(value, child);
  }
  return child;
}

/**
 * The x-svc-* headers of a served (or upstream-rejected) request (decisions §4), made once per distinct
 * (served, note): past an open circuit every request gets the same alert, whose JSON cost more than a
 * microsecond to build each time. The sets are found one Map level per field (provider, level, attempts, then the
 * exhausted provider, its reason and the note): each is a value the request already holds, where a joined
 * key was a new string to build and hash on every request.
 */
export function servedHeaderPairs(served: ServedBy, note: string | null = null): HeaderPairs {
  let node = below(below(below(cacheRoot, served.provider), served.level), served.attempts);
  const exhausted = served.exhausted;
  // no note and an empty one make the same alert
  if (exhausted) node = below(below(below(node, exhausted.provider), exhausted.reason), note ?? '');
  if (node.pairs) return node.pairs;
  const pairs = Object.freeze(
    Object.entries(buildServedHeaders(served, note)).map(([name, value]) => Object.freeze([name, value] as const)),
  );
  if (cachedSets >= SERVED_HEADERS_CACHED) {
    // start over; the node in hand belongs to the old cache and goes with it
    cacheRoot = {};
    cachedSets = 0;
    return pairs;
  }
  node.pairs = pairs;
  cachedSets += 1;
  return pairs;
}

/** The same headers as an object of its own (the caller may add to it). */
export function servedHeaders(served: ServedBy, note: string | null = null): Record<string, string> {
  return Object.fromEntries(servedHeaderPairs(served, note));
}

function buildServedHeaders(served: ServedBy, note: string | null): Record<string, string> {
  const headers: Record<string, string> = {
    'x-svc-provider-used': served.provider,
    'x-svc-is-fallback': String(served.level > 0),
    'x-svc-fallback-level': String(served.level),
    'x-svc-attempts': String(served.attempts),
  };
  const alert = alertFor(served, note);
  if (alert) headers['x-svc-fallback-alert'] = JSON.stringify(alert);
  return headers;
}

/** When no step served: `none` served, at the level the chain reached; the alert names the last failure. */
export function exhaustedHeaders(
  failures: Array<{ provider: string; reason: string; level: number }>,
  attempts: number,
): Record<string, string> {
  const last = failures[failures.length - 1];
  if (!last) return { 'x-svc-attempts': String(attempts) };
  const alert: FallbackAlert = {
    message: `all providers failed: ${failures.map((f) => `${f.provider} (${f.reason})`).join(', ')}`,
    exhausted_provider: last.provider,
    active_provider: NO_PROVIDER,
    fallback_level: last.level,
  };
  return {
    'x-svc-provider-used': NO_PROVIDER,
    'x-svc-is-fallback': String(last.level > 0),
    'x-svc-fallback-level': String(last.level),
    'x-svc-attempts': String(attempts),
    'x-svc-fallback-alert': JSON.stringify(alert),
  };
}
