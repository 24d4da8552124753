import type { Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { AttemptRecord } from '../usage/usage-record.entity';
import type { AccountSlot } from '../providers/account-pool';
import type { NewUsageRecord } from '../usage/usage.writer';
import type { TokenUsage } from '../providers/provider-adapter';
import type { ServedBy } from './failover-headers';
import type { RequestTrace } from '../tracing/request-trace';

export interface ScopeResult {
  status: number;
  usage?: TokenUsage | null;
  characters?: number | null;
}

/**
 * One proxied request as the failover core sees it: the key, the attempts made, who served, and
 * a signal that fires when the client goes away (which cancels the upstream call).
 */
export class FailoverScope {
  readonly startedAt = Date.now();
  readonly attempts: AttemptRecord[] = [];
  served: ServedBy | null = null;
  requestedModel = '';
  /** Appended to the failover alert's message (set by the attempt that served, e.g. a substituted voice). */
  alertNote: string | null = null;
  /**
   * The fallback providers whose failover the larger request this scope is part of has already
   * announced (an async task's chunks share one set): one `failover` event each, not one per chunk.
   */
  failoversAnnounced: Set<string> | null = null;
  /** The chain is walked again to continue a stream that broke after its first byte (its failover event says so). */
  midStream = false;
  /** The request's spans (decisions §12); null while traces are off or for a scope nobody traces. */
  trace: RequestTrace | null = null;
  /** The account whose slot the serving call holds (decisions §7), given back when the call ends or its stream breaks. */
  account: AccountSlot | null = null;
  /** Made only when something asks for `signal` (streams): an AbortController per request is not free. */
  private clientGone: AbortController | null = null;
  private goneReason: Error | null = null;
  private readonly abortListeners = new Set<(reason: Error) => void>();

  constructor(
    readonly requestId: string,
    readonly key: AuthenticatedKey,
    readonly capability: Capability,
    private readonly onFinish: (scope: FailoverScope, result: ScopeResult) => void,
  ) {}

  /** Fires when the client goes away. */
  get signal(): AbortSignal {
    if (!this.clientGone) {
      this.clientGone = new AbortController();
      if (this.goneReason) this.clientGone.abort(this.goneReason);
    }
    return this.clientGone.signal;
  }

  get aborted(): boolean {
    return this.goneReason !== null;
  }

  /** Calls `listener` when the client goes away (at once if it has); returns the undo. */
  onAbort(listener: (reason: Error) => void): () => void {
    if (this.goneReason) {
      listener(this.goneReason);
      return () => undefined;
    }
    this.abortListeners.add(listener);
    return () => this.abortListeners.delete(listener);
  }

  /** The client disconnected before the response ended. */
  abort(): void {
    if (this.goneReason) return;
    this.goneReason = new Error('client disconnected');
    this.clientGone?.abort(this.goneReason);
    for (const listener of this.abortListeners) listener(this.goneReason);
    this.abortListeners.clear();
  }

  /** Whether a failover to `provider` is news (its event is to be stored); records it as announced. */
  announceFailover(provider: string): boolean {
    if (!this.failoversAnnounced) return true;
    if (this.failoversAnnounced.has(provider)) return false;
    this.failoversAnnounced.add(provider);
    return true;
  }

  /** Records the request's usage: called once, by its ProxiedCall's end. */
  finish(result: ScopeResult): void {
    this.onFinish(this, result);
    // tracing hook: the request's spans end with its usage record
    this.trace?.end(result, this.served?.level ?? null);
  }
}

/** The usage record of a finished scope (written in a batch by the UsageWriter). */
export function usageOf(scope: FailoverScope, result: ScopeResult): NewUsageRecord {
  return {
    requestId: scope.requestId,
    keyId: scope.key.id,
    capability: scope.capability,
    requestedModel: scope.requestedModel,
    provider: scope.served?.provider ?? null,
    model: scope.served?.model ?? null,
    fallbackLevel: scope.served?.level ?? null,
    status: result.status,
    latencyMs: Date.now() - scope.startedAt,
    attempts: scope.attempts,
    promptTokens: result.usage?.prompt_tokens ?? null,
    completionTokens: result.usage?.completion_tokens ?? null,
    totalTokens: result.usage?.total_tokens ?? null,
    characters: result.characters ?? null,
  };
}
