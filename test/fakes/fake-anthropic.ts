import type { ServerResponse } from 'node:http';
import {
  continuing,
  FakeExchange,
  FakeUpstream,
  passesFault,
  prefillOf,
  sendJson,
  startSse,
  wordsOf,
} from './fake-upstream';

export type { ModeOptions, RecordedRequest } from './fake-upstream';

export type FakeAnthropicMode =
  | 'ok'
  | 'error500'
  | 'rate429'
  | 'auth401'
  | 'bad400'
  | 'overloaded529'
  /** A 404 `not_found_error` naming the requested model (Anthropic's answer for a model it does not have). */
  | 'modelNotFound404'
  | 'hang'
  | 'refuse'
  /** Streams start normally, then an `error` event (overloaded_error) replaces the rest. */
  | 'errorMidStream'
  /** Streams end cleanly after their `message_delta` (with its stop_reason), without `message_stop`. */
  | 'endWithoutStop'
  /** Streams cut (the connection dropped) after `count` (default 2) text deltas. */
  | 'cutAfter'
  /** Streams that go silent after `count` (default 2) text deltas, until the client leaves. */
  | 'stallAfter'
  /** A 400 for a request whose last message is the assistant's (a model that takes no prefill); others as `ok`. */
  | 'noPrefill';

export interface FakeAnthropicOptions {
  /** Named in every reply (`Hello from <name> ...`) and in the `x-fake-provider` header. */
  name?: string;
  mode?: FakeAnthropicMode;
  /** Pause between stream events (default 0). */
  chunkDelayMs?: number;
  /** Reply text; defaults to `Hello from <name> (<model>).` */
  reply?: string;
  /** The `stop_reason` answers carry (default `end_turn`). */
  stopReason?: string;
}

export type FakeAnthropic = FakeUpstream<FakeAnthropicMode> & {
  readonly name: string;
  chunkDelayMs: number;
  /** The `stop_reason` answers carry; may be changed at any time. */
  stopReason: string;
  replyFor(model: string): string;
};

let sequence = 0;

function anthropicError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message } });
}

const countTokens = (value: unknown): number => Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));

/** Anthropic's Messages API on 127.0.0.1 whose failures are switched by mode. */
export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const name = options.name ?? 'fake-anthropic';
  const replyFor = (model: string): string => options.reply ?? `Hello from ${name} (${model}).`;
  const tag = { 'x-fake-provider': name };

  const messages = async (x: FakeExchange<FakeAnthropicMode>, self: FakeAnthropic): Promise<void> => {
    const model = x.record.model ?? 'unknown';
    // a trailing assistant turn is continued, as the Messages API does
    const text = continuing(replyFor(model), prefillOf(x.record.body));
    const id = `msg_fake_${++sequence}`;
    const fields = (x.record.body ?? {}) as Record<string, unknown>;
    const inputTokens = countTokens([fields.system, fields.messages]);
    const outputTokens = countTokens(text);
    if (!x.record.stream) {
      return sendJson(
        x.res,
        200,
        {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [{ type: 'text', text }],
          stop_reason: self.stopReason,
          stop_sequence: null,
          usage: { input_tokens: inputTokens, output_tokens: outputTokens },
        },
        tag,
      );
    }
    const send = startSse(x.res, tag);
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    };
    const events: [string, unknown][] = [
      ['message_start', { type: 'message_start', message }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['ping', { type: 'ping' }],
    ];
    if (x.mode === 'errorMidStream') {
      events.push(['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
    } else {
      for (const word of wordsOf(text))
        events.push([
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } },
        ]);
      events.push(
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        [
          'message_delta',
          {
            type: 'message_delta',
            delta: { stop_reason: self.stopReason, stop_sequence: null },
            usage: { output_tokens: outputTokens },
          },
        ],
      );
      if (x.mode !== 'endWithoutStop') events.push(['message_stop', { type: 'message_stop' }]);
    }
    let deltas = 0;
    for (const [i, [event, data]] of events.entries()) {
      if (i > 0 && self.chunkDelayMs > 0 && !(await x.wait(self.chunkDelayMs))) return;
      if (event === 'content_block_delta' && !(await passesFault(x, deltas++))) return;
      if (!(await send(event, JSON.stringify(data), i === events.length - 1))) return;
    }
  };

  const models = (x: FakeExchange<FakeAnthropicMode>): void =>
    sendJson(
      x.res,
      200,
      {
        data: [
          {
            type: 'model',
            id: 'claude-haiku-4-5',
            display_name: 'Claude Haiku 3.5',
            created_at: '2024-10-22T00:00:00Z',
          },
        ],
        has_more: false,
        first_id: 'claude-haiku-4-5',
        last_id: 'claude-haiku-4-5',
      },
      tag,
    );

  const handler = async (x: FakeExchange<FakeAnthropicMode>): Promise<void> => {
    const { res, mode, settings, record } = x;
    switch (mode) {
      case 'error500':
        return anthropicError(
          res,
          settings.status ?? 500,
          'api_error',
          settings.message ?? `${name}: Internal server error`,
        );
      case 'rate429':
        return anthropicError(
          res,
          429,
          'rate_limit_error',
          settings.message ?? `${name}: Number of request tokens has exceeded your rate limit.`,
        );
      case 'auth401':
        return anthropicError(res, 401, 'authentication_error', settings.message ?? `${name}: invalid x-api-key`);
      case 'bad400':
        return anthropicError(
          res,
          400,
          'invalid_request_error',
          settings.message ?? `${name}: messages: field required`,
        );
      case 'overloaded529':
        return anthropicError(res, 529, 'overloaded_error', settings.message ?? 'Overloaded');
      case 'modelNotFound404':
        return anthropicError(res, 404, 'not_found_error', settings.message ?? `model: ${record.model ?? ''}`);
      case 'hang':
      case 'refuse':
        return; // hang: the socket stays open until the client or close() ends it
      case 'noPrefill':
        if (prefillOf(record.body) !== null)
          return anthropicError(res, 400, 'invalid_request_error', `${name}: this model does not support prefill`);
        break;
      case 'ok':
      case 'cutAfter':
      case 'stallAfter':
      case 'errorMidStream':
      case 'endWithoutStop':
        break;
    }
    const route = `${record.method} ${record.path}`;
    if (route === 'POST /v1/messages' && /\s$/.test(prefillOf(record.body) ?? ''))
      return anthropicError(
        res,
        400,
        'invalid_request_error',
        'final assistant content cannot end with trailing whitespace',
      );
    if (route === 'POST /v1/messages') return messages(x, fake);
    if (route === 'GET /v1/models') return models(x);
    anthropicError(res, 404, 'not_found_error', `Unknown request URL: ${route}`);
  };

  const upstream = new FakeUpstream<FakeAnthropicMode>(options.mode ?? 'ok', handler);
  const fake: FakeAnthropic = Object.assign(upstream, {
    name,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    stopReason: options.stopReason ?? 'end_turn',
    replyFor,
  });
  return fake.listen('/v1');
}
