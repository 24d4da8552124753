import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { ResolvedProvider } from '../config/gateway-config';
import type {
  AdapterFactory,
  CallContext,
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  ProviderAdapter,
  TokenUsage,
} from './provider-adapter';
import { abortFailure } from './http';

/** Every reply starts with this, so nobody mistakes the demo provider for a model. */
export const ECHO_LABEL = '[echo demo provider]';

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) =>
      typeof part === 'object' && part !== null && 'text' in part && typeof part.text === 'string' ? part.text : '',
    )
    .join('');
}

/** Rough token count (about four characters a token), enough for demo usage figures. */
export function roughTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}

export function echoReply(request: ChatRequest): string {
  const lastUser = [...request.messages].reverse().find((m) => m.role === 'user');
  const said = lastUser ? textOf(lastUser.content).trim() : '';
  return said ? `${ECHO_LABEL} You said: ${said}` : `${ECHO_LABEL} You said nothing.`;
}

function echoUsage(request: ChatRequest, reply: string): TokenUsage {
  const prompt = request.messages.reduce((sum, m) => sum + roughTokens(textOf(m.content)), 0);
  const completion = roughTokens(reply);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

const completionId = (): string => `chatcmpl-echo-${randomBytes(12).toString('hex')}`;

/** Built-in demo chat provider: no network, replies with the caller's own last message. */
export class EchoAdapter implements ProviderAdapter {
  readonly kind = 'echo' as const;

  constructor(readonly provider: ResolvedProvider) {}

  chat(request: ChatRequest, ctx: CallContext): Promise<ChatCompletion> {
    if (ctx.signal.aborted) return Promise.reject(abortFailure(ctx.signal.reason));
    const content = echoReply(request);
    return Promise.resolve({
      id: completionId(),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: ctx.model,
      choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
      usage: echoUsage(request, content),
    });
  }

  chatStream(request: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    if (ctx.signal.aborted) return Promise.reject(abortFailure(ctx.signal.reason));
    const reply = echoReply(request);
    const base = {
      id: completionId(),
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: ctx.model,
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null): ChatChunk => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    // words keep their trailing space, so the chunks concatenate to the reply
    const words = reply.split(/(?<=\s)/);
    async function* chunks(): AsyncGenerator<ChatChunk> {
      yield chunk({ role: 'assistant', content: '' }, null);
      for (const word of words) {
        // a tick between words: a stream that arrives in pieces, like a real one
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (ctx.signal.aborted) throw abortFailure(ctx.signal.reason);
        yield chunk({ content: word }, null);
      }
      yield { ...chunk({}, 'stop'), usage: echoUsage(request, reply) };
    }
    return Promise.resolve(chunks());
  }

  probe(): Promise<void> {
    return Promise.resolve();
  }
}

@Injectable()
export class EchoAdapterFactory implements AdapterFactory {
  readonly kind = 'echo' as const;

  create(provider: ResolvedProvider): EchoAdapter {
    return new EchoAdapter(provider);
  }
}
