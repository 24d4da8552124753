import { Logger } from '@nestjs/common';
import { continuationModes, type ContinuingMode } from '../config/continuation';
import type { GatewayConfig } from '../config/gateway-config';
import { requestFields } from '../config/logging';
import { CLIENT_FAULT_STATUSES, type PlannedStep } from '../failover/chain';
import type { Primed, ProxiedCall } from '../failover/proxied-call';
import {
  type CallContext,
  type ChatChunk,
  type ChatRequest,
  type ProviderAdapter,
  UpstreamFailure,
} from '../providers/provider-adapter';
import { DeliveredText, type Prefix, readPast } from './continued-text';

/** A continuing answer, primed on its first chunk with something new, and the mode that continues it. */
export interface ContinuedChat extends Primed<ChatChunk> {
  mode: ContinuingMode;
}

/** What the chunk where a continuation starts carries (decisions §3); `offset`: characters already delivered. */
export interface ContinuationMark {
  from: string;
  to: string;
  mode: ContinuingMode;
  offset: number;
}

/** A mode a step cannot continue with here: its refusal of a prefill, or a restart whose text differs. */
class ModeRefused extends Error {}

const logger = new Logger('ChatContinuation');

/** Whether `err` says this mode does not work on the step (the next mode or step is tried), and how to say it. */
function refusal(err: unknown): string | null {
  if (err instanceof ModeRefused) return err.message;
  if (err instanceof UpstreamFailure && err.outcome.kind === 'http' && CLIENT_FAULT_STATUSES.has(err.outcome.status))
    return `refused (HTTP ${err.outcome.status})`;
  return null;
}

/** Unicode characters of `text` (what `svc_continuation.offset` counts). */
function characters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // the low half of a surrogate pair is the same character as its high half
    if (code < 0xdc00 || code > 0xdfff) count++;
  }
  return count;
}

/**
 * Continues a chat stream that broke after its first byte (decisions §3) on the later steps of the chain that can:
 * each step's `continuation` modes in order, `prefill` (the delivered text as a trailing assistant turn, its output
 * appended) or `restart` (the request again, its output swallowed while it repeats the delivered text, abandoned at
 * the first character that differs). A mode that does not work on a step is recorded and never the client's error.
 */
export class ChatContinuation {
  constructor(
    private readonly gateway: GatewayConfig,
    private readonly call: ProxiedCall,
    private readonly request: ChatRequest,
    readonly delivered: DeliveredText,
  ) {}

  /** The continuing answer, its first chunk marked with `svc_continuation`; null when no step continues it. */
  async after(reason: string): Promise<ContinuedChat | null> {
    // a text continuation cannot redo tool calls or several choices: the explicit error then
    if (!this.delivered.textOnly || (typeof this.request.n === 'number' && this.request.n > 1)) return null;
    const from = this.call.scope.served?.provider ?? '';
    const text = this.delivered.text;
    const started = Date.now();
    const continued = await this.call.continueStream<ContinuedChat>(
      reason,
      (adapter, ctx, step) => this.attempt(adapter, ctx, step, text),
      (step) => this.modesOf(step).length > 0,
    );
    if (!continued) return null;
    const mark: ContinuationMark = {
      from,
      to: this.call.scope.served?.provider ?? '',
      mode: continued.mode,
      offset: characters(text),
    };
    logger.log(
      { ...requestFields(this.call.requestId), continuation: mark },
      `${mark.from}'s stream for ${this.call.requestId} continued on ${mark.to} by ${mark.mode} after ${mark.offset} characters (${Date.now() - started} ms)`,
    );
    if (!continued.first.done)
      continued.first = { done: false, value: { ...continued.first.value, svc_continuation: mark } };
    return continued;
  }

  /** The modes a later step continues with (none: it is not walked). */
  private modesOf(step: PlannedStep): ContinuingMode[] {
    const provider = this.gateway.provider(step.provider);
    return provider ? continuationModes(step.step, provider) : [];
  }

  /** One step: its modes in order until one continues; none → a failure the core passes to the next step. */
  private async attempt(
    adapter: ProviderAdapter,
    ctx: CallContext,
    step: PlannedStep,
    text: string,
  ): Promise<ContinuedChat> {
    const refused: string[] = [];
    for (const mode of this.modesOf(step)) {
      const started = Date.now();
      try {
        return mode === 'prefill' ? await this.prefill(adapter, ctx, text) : await this.restart(adapter, ctx, text);
      } catch (err) {
        const why = refusal(err);
        if (why === null) throw err;
        refused.push(`${mode} ${why}`);
        this.call.scope.attempts.push({
          provider: step.provider,
          model: step.model,
          level: step.level,
          outcome: `continuation by ${mode}: ${why}`,
          latency_ms: Date.now() - started,
        });
      }
    }
    // the step is not at fault for the break or for a mode it does not take: next step, its circuit untouched
    throw new UpstreamFailure({
      kind: 'provider_error',
      code: 'cannot_continue',
      message: refused.join('; '),
      requestFault: true,
    });
  }

  private async prefill(adapter: ProviderAdapter, ctx: CallContext, text: string): Promise<ContinuedChat> {
    // Anthropic refuses a final assistant turn that ends in white space: it is sent trimmed and swallowed if repeated
    const head = text.trimEnd();
    const messages = [...this.request.messages, { role: 'assistant', content: head }];
    const prefix: Prefix = { text: text.slice(head.length), strict: false };
    return this.primed(adapter, { ...this.request, model: ctx.model, messages }, ctx, prefix, 'prefill');
  }

  private restart(adapter: ProviderAdapter, ctx: CallContext, text: string): Promise<ContinuedChat> {
    return this.primed(adapter, { ...this.request, model: ctx.model }, ctx, { text, strict: true }, 'restart');
  }

  private async primed(
    adapter: ProviderAdapter,
    request: ChatRequest,
    ctx: CallContext,
    prefix: Prefix,
    mode: ContinuingMode,
  ): Promise<ContinuedChat> {
    if (!adapter.chatStream)
      throw new UpstreamFailure({ kind: 'http', status: 501, message: 'chat is not supported by this adapter' });
    const rest = (await adapter.chatStream(request, ctx))[Symbol.asyncIterator]();
    const first = await readPast(rest, prefix);
    if (typeof first === 'string') {
      await rest.return?.().catch(() => undefined);
      throw new ModeRefused(first);
    }
    return { first, rest, mode };
  }
}
