import { adapterFactory, HttpProviderAdapter } from './http-adapter';
import type { ResolvedProvider } from '../config/gateway-config';
import {
  CallContext,
  ChatChunk,
  ChatCompletion,
  ChatRequest,
  ProviderAdapter,
  TokenUsage,
  UpstreamFailure,
} from './provider-adapter';
import { isRecord, parseJsonBody, SseEvent, StreamStep, UpstreamClientOptions } from './http';
import type { UpstreamExecutor } from './upstream-executor';
import { ChatStreamTolerance } from './stream-tolerance';

export const ANTHROPIC_VERSION = '2023-06-01';
/** Anthropic requires max_tokens; OpenAI clients often leave it out. */
export const DEFAULT_MAX_TOKENS = 1024;

/** Anthropic error `type` → the HTTP status it stands for, so mid-stream errors classify like HTTP ones. */
const ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

const FINISH_REASON: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

function finishReason(stopReason: unknown): string | null {
  if (typeof stopReason !== 'string') return null;
  return FINISH_REASON[stopReason] ?? 'stop';
}

const num = (value: unknown): number => (typeof value === 'number' ? value : 0);

function toUsage(usage: unknown, promptTokens?: number): TokenUsage | undefined {
  if (!isRecord(usage)) return undefined;
  // OpenAI's prompt_tokens include cached tokens; Anthropic reports them apart
  const prompt =
    promptTokens ??
    num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens);
  const completion = num(usage.output_tokens);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Text of an OpenAI message content: a string or an array of `{type:'text', text}` parts. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function toAnthropicPart(part: unknown): unknown {
  if (!isRecord(part)) return part;
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'image_url' && isRecord(part.image_url) && typeof part.image_url.url === 'string') {
    const data = /^data:([^;,]+);base64,(.*)$/s.exec(part.image_url.url);
    const source = data
      ? { type: 'base64', media_type: data[1], data: data[2] }
      : { type: 'url', url: part.image_url.url };
    return { type: 'image', source };
  }
  return part; // unknown parts go through; Anthropic's own 400 explains what it cannot take
}

function toAnthropicContent(content: unknown): unknown {
  if (Array.isArray(content)) return content.map(toAnthropicPart);
  return typeof content === 'string' ? content : textOf(content);
}

/** A chat completions request as a Messages API request. */
export function toAnthropicRequest(request: ChatRequest, model: string, stream: boolean): Record<string, unknown> {
  const system: string[] = [];
  const messages: { role: 'user' | 'assistant'; content: unknown }[] = [];
  for (const message of request.messages) {
    if (message.role === 'system' || message.role === 'developer') system.push(textOf(message.content));
    else
      messages.push({
        role: message.role === 'assistant' ? 'assistant' : 'user',
        content: toAnthropicContent(message.content),
      });
  }
  const maxTokens = request.max_tokens ?? request.max_completion_tokens;
  const stop = request.stop;
  const stopSequences =
    typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop.filter((s) => typeof s === 'string') : undefined;
  return {
    model,
    max_tokens: typeof maxTokens === 'number' ? maxTokens : DEFAULT_MAX_TOKENS,
    messages,
    ...(system.length > 0 ? { system: system.join('\n\n') } : {}),
    ...(typeof request.temperature === 'number' ? { temperature: request.temperature } : {}),
    ...(typeof request.top_p === 'number' ? { top_p: request.top_p } : {}),
    ...(stopSequences && stopSequences.length > 0 ? { stop_sequences: stopSequences } : {}),
    ...(typeof request.user === 'string' ? { metadata: { user_id: request.user } } : {}),
    ...(stream ? { stream: true } : {}),
  };
}

/** A Messages API response as a `chat.completion`. */
export function fromAnthropicMessage(
  message: Record<string, unknown>,
  created = Math.floor(Date.now() / 1000),
): ChatCompletion {
  const blocks = Array.isArray(message.content) ? message.content : [];
  const content = blocks
    .map((block) => (isRecord(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .join('');
  const usage = toUsage(message.usage);
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model: message.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content },
        logprobs: null,
        finish_reason: finishReason(message.stop_reason),
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/** Anthropic's `{type:'error', error:{type, message}}` as the failure its HTTP status would be. */
export function anthropicErrorFailure(payload: Record<string, unknown>): UpstreamFailure {
  const error = isRecord(payload.error) ? payload.error : {};
  const type = typeof error.type === 'string' ? error.type : 'api_error';
  const message = typeof error.message === 'string' ? error.message : type;
  return new UpstreamFailure({ kind: 'http', status: ERROR_STATUS[type] ?? 500, message, error: { type } });
}

/** Messages stream events → `chat.completion.chunk`s: a role chunk, content deltas, a finish chunk with usage. */
export class AnthropicStreamTranslator {
  private id = '';
  private model = '';
  private promptTokens: number | undefined;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly fallbackModel: string) {}

  readonly translate = (event: SseEvent): StreamStep<ChatChunk> => {
    const data = parseJsonBody(event.data);
    switch (data.type) {
      case 'message_start': {
        const message = isRecord(data.message) ? data.message : {};
        this.id = typeof message.id === 'string' ? message.id : '';
        this.model = typeof message.model === 'string' ? message.model : this.fallbackModel;
        this.promptTokens = toUsage(message.usage)?.prompt_tokens;
        return this.chunk({ role: 'assistant', content: '' }, null);
      }
      case 'content_block_start': {
        const block = isRecord(data.content_block) ? data.content_block : {};
        return block.type === 'text' && typeof block.text === 'string' && block.text
          ? this.chunk({ content: block.text }, null)
          : undefined;
      }
      case 'content_block_delta': {
        const delta = isRecord(data.delta) ? data.delta : {};
        return delta.type === 'text_delta' && typeof delta.text === 'string'
          ? this.chunk({ content: delta.text }, null)
          : undefined;
      }
      case 'message_delta': {
        const delta = isRecord(data.delta) ? data.delta : {};
        const inputTokens = isRecord(data.usage) ? data.usage.input_tokens : undefined;
        const usage = toUsage(data.usage, typeof inputTokens === 'number' ? undefined : this.promptTokens);
        return { ...this.chunk({}, finishReason(delta.stop_reason) ?? 'stop'), ...(usage ? { usage } : {}) };
      }
      case 'message_stop':
        return 'end';
      case 'error':
        throw anthropicErrorFailure(data);
      default:
        return undefined; // ping, content_block_stop, and events added after this adapter
    }
  };

  private chunk(delta: Record<string, unknown>, finish: string | null): ChatChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model || this.fallbackModel,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
  }
}

/** Anthropic's Messages API behind the chat completions shape. */
export class AnthropicAdapter extends HttpProviderAdapter implements ProviderAdapter {
  readonly kind = 'anthropic' as const;

  constructor(provider: ResolvedProvider, options: UpstreamClientOptions = {}, executor?: UpstreamExecutor) {
    super(provider, { 'x-api-key': provider.apiKey ?? '', 'anthropic-version': ANTHROPIC_VERSION }, options, executor);
  }

  async chat(request: ChatRequest, ctx: CallContext): Promise<ChatCompletion> {
    const body = JSON.stringify(toAnthropicRequest(request, ctx.model, false));
    const message = await this.upstream.json({
      method: 'POST',
      path: '/messages',
      headers: this.headers,
      body,
      signal: ctx.signal,
    });
    return fromAnthropicMessage(message);
  }

  async chatStream(request: ChatRequest, ctx: CallContext): Promise<AsyncIterable<ChatChunk>> {
    const body = JSON.stringify(toAnthropicRequest(request, ctx.model, true));
    const tolerance = new ChatStreamTolerance(
      new AnthropicStreamTranslator(ctx.model).translate,
      this.provider.name,
      ctx.requestId,
    );
    return this.upstream.events(
      { method: 'POST', path: '/messages', headers: this.headers, body, signal: ctx.signal },
      tolerance.translate,
      { complete: tolerance.complete },
    );
  }
}

export const AnthropicAdapterFactory = adapterFactory(
  'anthropic',
  (provider, pool) => new AnthropicAdapter(provider, pool),
);
