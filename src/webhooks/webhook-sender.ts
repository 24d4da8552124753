import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { lookup as dnsLookup, LookupAddress, LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { EnvironmentVariables } from '../config/env.schema';
import { BlockedRange, blockedRange } from './address-policy';
import { deliveryHeaders, WebhookEventType } from './signature';
import { storableText } from './storable-text';
import { DESTINATION_NOT_ALLOWED, literalAddress, portAllowed } from './webhook-url';

/** A receiver must answer within this (connect, headers and the read snippet together): the contract's 10 s, and the ceiling of SVC_WEBHOOK_TIMEOUT_MS. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** How much of the receiver's answer is kept for operators. */
const SNIPPET_BYTES = 2048;

export interface AttemptResult {
  delivered: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  snippet: string | null;
  /** No answer within the attempt timeout: what holds a lane longest, so the endpoint's backoff counts these. */
  timedOut?: boolean;
  /** A failed attempt's low-cardinality kind for its span's `error.type`: the HTTP status, `timeout`, a socket code. */
  errorType?: string;
}

/** A destination webhooks may not reach; raised inside the connection's own DNS lookup. Its text names no address. */
export class AddressRefused extends Error {
  readonly code = 'EWEBHOOKADDRESS';
  constructor(
    readonly address: string,
    readonly range: BlockedRange | 'port' | 'unresolved',
  ) {
    super(DESTINATION_NOT_ALLOWED);
  }
}

type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Lookup errors that mean "this name has no address" (as opposed to a resolver that is down). */
const UNRESOLVED = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME']);

/**
 * The lookup the connection itself uses: every address of the host is checked and the socket
 * connects to a checked one, so a second DNS answer (rebinding) can never slip past the check.
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      // a name that does not resolve reads like a refused one: else the two answers map which internal names exist
      const unresolved = !err ? addresses.length === 0 : UNRESOLVED.has(err.code ?? '');
      if (unresolved && !allowPrivate) return callback(new AddressRefused('', 'unresolved'), '', 0);
      if (err) return callback(err, '', 0);
      const refused = allowPrivate
        ? undefined
        : addresses.map((a) => ({ a, range: blockedRange(a.address) })).find((x) => x.range !== null);
      if (refused?.range) return callback(new AddressRefused(refused.a.address, refused.range), '', 0);
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the receiver',
};

const TIMEOUT_TEXT: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'no connection within',
  UND_ERR_HEADERS_TIMEOUT: 'no response within',
  UND_ERR_BODY_TIMEOUT: 'no response within',
};

type Failure = { code?: unknown; message?: unknown; cause?: unknown };

/** The error and its causes, outermost first (a few levels: undici wraps socket errors). */
function* causes(err: unknown): Generator<Failure> {
  // duck-typed, not instanceof: socket errors may come from another realm (vm contexts, workers)
  for (
    let e = err as Failure | null, depth = 0;
    typeof e === 'object' && e !== null && depth < 5;
    e = e.cause as Failure | null, depth++
  )
    yield e;
}

/** True when the attempt failed for want of an answer in time (our deadline or one of undici's). */
export function isTimeout(err: unknown, timedOut: boolean): boolean {
  if (timedOut) return true;
  for (const e of causes(err)) if (typeof e.code === 'string' && TIMEOUT_TEXT[e.code]) return true;
  return false;
}

/** A failed attempt's `error.type`: `timeout`, `destination_not_allowed`, a socket or TLS code (never a message). */
export function failureType(err: unknown, timedOut: boolean): string {
  if (isTimeout(err, timedOut)) return 'timeout';
  for (const e of causes(err)) {
    if (e instanceof AddressRefused) return 'destination_not_allowed';
    if (typeof e.code === 'string' && /^[A-Z0-9_]{1,40}$/.test(e.code)) return e.code;
  }
  return 'error';
}

/** A short, secret-free reason for a failed attempt. */
export function describeFailure(err: unknown, timedOut: boolean, timeoutMs = DELIVERY_TIMEOUT_MS): string {
  const within = `${timeoutMs / 1000} s`;
  for (const e of causes(err)) {
    if (e instanceof AddressRefused) return e.message;
    if (typeof e.code === 'string' && ERROR_TEXT[e.code]) return ERROR_TEXT[e.code];
    if (typeof e.code === 'string' && TIMEOUT_TEXT[e.code]) return `${TIMEOUT_TEXT[e.code]} ${within}`;
    if (typeof e.code === 'string' && /CERT|SSL|TLS/.test(e.code)) return `TLS error: ${e.code}`;
  }
  if (timedOut) return `no response within ${within}`;
  const message = (err as Failure | null)?.message;
  return storableText((typeof message === 'string' ? message : String(err)).slice(0, 200));
}

async function readSnippet(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    // the rest is not needed: stop reading rather than download a large answer
    if (size >= SNIPPET_BYTES) {
      body.destroy();
      break;
    }
  }
  // invalid UTF-8 decodes to U+FFFD; a NUL (UTF-16, binary) would make PostgreSQL refuse the whole attempt
  return storableText(Buffer.concat(parts).subarray(0, SNIPPET_BYTES).toString('utf8'));
}

/** POSTs one signed attempt; never throws, never follows a redirect. */
@Injectable()
export class WebhookSender implements OnApplicationShutdown {
  private readonly allowPrivate: boolean;
  private readonly agent: Agent;
  /** SVC_WEBHOOK_TIMEOUT_MS: at most the contract's 10 s. */
  readonly timeoutMs: number;

  constructor(env: EnvironmentVariables) {
    this.allowPrivate = env.SVC_WEBHOOK_ALLOW_PRIVATE;
    this.timeoutMs = Math.min(env.SVC_WEBHOOK_TIMEOUT_MS ?? DELIVERY_TIMEOUT_MS, DELIVERY_TIMEOUT_MS);
    this.agent = new Agent({
      connect: { lookup: guardedLookup(this.allowPrivate), timeout: this.timeoutMs },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      keepAliveTimeout: 4000,
    });
  }

  async send(
    url: string,
    event: WebhookEventType,
    secret: string,
    body: string,
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    // a literal IP never goes through DNS, so the lookup guard does not see it: check it here
    const literal = literalAddress(new URL(url));
    const range = this.allowPrivate ? null : !portAllowed(url) ? 'port' : literal ? blockedRange(literal) : null;
    if (range)
      return {
        delivered: false,
        statusCode: null,
        latencyMs: elapsed(),
        error: DESTINATION_NOT_ALLOWED,
        snippet: null,
        errorType: 'destination_not_allowed',
      };
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(url, {
        method: 'POST',
        headers: deliveryHeaders(secret, event, body, Date.now()),
        body,
        dispatcher: this.agent,
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
      const snippet = await readSnippet(res.body);
      const delivered = res.statusCode >= 200 && res.statusCode < 300;
      const redirect = res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : '';
      return {
        delivered,
        statusCode: res.statusCode,
        latencyMs: elapsed(),
        error: delivered ? null : `HTTP ${res.statusCode}${redirect}`,
        snippet,
        ...(!delivered && { errorType: String(res.statusCode) }),
      };
    } catch (err) {
      return {
        delivered: false,
        statusCode: null,
        latencyMs: elapsed(),
        error: describeFailure(err, timeout.aborted, this.timeoutMs),
        snippet: null,
        timedOut: isTimeout(err, timeout.aborted),
        errorType: failureType(err, timeout.aborted),
      };
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.agent.destroy().catch(() => undefined);
  }
}
