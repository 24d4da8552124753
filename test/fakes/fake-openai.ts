import {
  continuing,
  FakeExchange,
  FakeUpstream,
  passesFault,
  prefillOf,
  sendJson,
  startSse,
  wordsOf,
  writeThenDrop,
} from './fake-upstream';
import { createVoiceThing, deleteVoiceThing, openAiError, speech } from './fake-openai-audio';

export type { ModeOptions, RecordedRequest } from './fake-upstream';
export { fakeAudio } from './fake-openai-audio';

export type FakeOpenAiMode =
  | 'ok'
  | 'error500'
  | 'rate429'
  | 'auth401'
  | 'bad400'
  | 'notfound404'
  | 'hang'
  | 'slowFirstByte'
  | 'refuse'
  | 'dropAfterFirstChunk'
  | 'endWithoutDone'
  /** A stream that ends cleanly with neither a `finish_reason` nor `[DONE]` (a truncated answer). */
  | 'endWithoutFinish'
  /** A stream with `count` (default 1) data events that are not JSON after its first chunk; otherwise whole. */
  | 'malformed'
  /** Streams cut (the connection dropped) after `count` (default 2) chunks of text. */
  | 'cutAfter'
  /** Streams that go silent after `count` (default 2) chunks of text, until the client leaves. */
  | 'stallAfter'
  /** A 400 for a request whose last message is the assistant's (a server that takes no prefill); others as `ok`. */
  | 'noPrefill'
  /** A stream whose headers come at once and its first data event after `delayMs` (a slow first token). */
  | 'slowFirstToken'
  /** A stream that falls silent for `delayMs` after its first chunk, then goes on. */
  | 'stallAfterFirstChunk';

export interface FakeOpenAiOptions {
  /** Named in every reply (`Hello from <name> ...`) and in the `x-fake-provider` header. */
  name?: string;
  mode?: FakeOpenAiMode;
  /** Pause between stream events (default 0). */
  chunkDelayMs?: number;
  /** Reply text; defaults to `Hello from <name> (<model>).` */
  reply?: string;
  /** Model ids `GET /v1/models` lists. */
  models?: string[];
  /** Writes of a `pcm` speech body (default 5). */
  audioChunks?: number;
  /** Continues a trailing assistant turn (as servers that take a prefill do) instead of answering anew. */
  prefill?: boolean;
}

export type FakeOpenAi = FakeUpstream<FakeOpenAiMode> & {
  readonly name: string;
  /** Pause between stream events; may be changed at any time. */
  chunkDelayMs: number;
  /** The text a successful answer for `model` carries. */
  replyFor(model: string): string;
  /** Writes of a `pcm` speech body; may be changed at any time. */
  audioChunks: number;
  /** `pcm` speech writes made since the counter was last zeroed. */
  audioChunksSent: number;
  /** Consents (`cons_…`) and custom voices (`voice_…`) created through the audio voice endpoints, until deleted. */
  voiceThings: Map<string, { kind: 'consent' | 'voice'; fields: Record<string, string>; file: Buffer }>;
};

let sequence = 0;

const countTokens = (value: unknown): number => Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));

/** An OpenAI-compatible API on 127.0.0.1 whose failures are switched by mode. */
export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const name = options.name ?? 'fake-openai';
  const replyFor = (model: string): string => options.reply ?? `Hello from ${name} (${model}).`;
  const tag = { 'x-fake-provider': name };

  const chat = async (x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): Promise<void> => {
    const model = x.record.model ?? 'unknown';
    const text = continuing(replyFor(model), options.prefill ? prefillOf(x.record.body) : null);
    const id = `chatcmpl-fake-${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const fields = (x.record.body ?? {}) as Record<string, unknown>;
    const usage = {
      prompt_tokens: countTokens(fields.messages),
      completion_tokens: countTokens(text),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    if (!x.record.stream) {
      const completion = {
        id,
        object: 'chat.completion',
        created,
        model,
        system_fingerprint: 'fp_fake',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text, refusal: null },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage,
      };
      if (x.mode === 'dropAfterFirstChunk') {
        const whole = JSON.stringify(completion);
        x.res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(whole),
          ...tag,
        });
        return writeThenDrop(x.res, whole.slice(0, whole.length >> 1));
      }
      return sendJson(x.res, 200, completion, tag);
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
      JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: 'fp_fake',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      });
    const [first, ...rest] = wordsOf(text);
    if (x.mode === 'dropAfterFirstChunk') {
      x.res.writeHead(200, { 'content-type': 'text/event-stream', ...tag });
      return writeThenDrop(x.res, `data: ${chunk({ role: 'assistant', content: first }, null)}\n\n`);
    }
    const send = startSse(x.res, tag);
    // a request with `tools` is answered with a call of its first tool, the reply's words as its arguments
    const tools = Array.isArray(fields.tools);
    const call = (word: string, i: number): Record<string, unknown> => ({
      tool_calls: [
        i === 0
          ? { index: 0, id: `call_fake_${sequence}`, type: 'function', function: { name: 'answer', arguments: word } }
          : { index: 0, function: { arguments: word } },
      ],
    });
    const events = [
      chunk({ role: 'assistant', ...(tools ? { content: null, ...call(first, 0) } : { content: first }) }, null),
      ...(x.mode === 'malformed'
        ? Array.from({ length: x.settings.count ?? 1 }, (_, i) => `{"id": "${id}", "choices": [ broken ${i}`)
        : []),
      ...rest.map((word, i) => chunk(tools ? call(word, i + 1) : { content: word }, null)),
    ];
    if (x.mode !== 'endWithoutFinish') events.push(chunk({}, tools ? 'tool_calls' : 'stop'));
    const streamOptions = fields.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage && x.mode !== 'endWithoutFinish')
      events.push(JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage }));
    if (x.mode !== 'endWithoutDone' && x.mode !== 'endWithoutFinish') events.push('[DONE]');
    if (x.mode === 'slowFirstToken') {
      x.res.flushHeaders(); // the headers now; Node holds them back until the first write otherwise
      if (!(await x.wait(x.settings.delayMs ?? 1000))) return;
    }
    for (const [i, data] of events.entries()) {
      if (i > 0 && self.chunkDelayMs > 0 && !(await x.wait(self.chunkDelayMs))) return;
      if (i === 1 && x.mode === 'stallAfterFirstChunk' && !(await x.wait(x.settings.delayMs ?? 1000))) return;
      if (!(await passesFault(x, i))) return;
      if (!(await send(null, data, i === events.length - 1))) return;
    }
  };

  const models = (x: FakeExchange<FakeOpenAiMode>): void =>
    sendJson(
      x.res,
      200,
      {
        object: 'list',
        data: (options.models ?? ['gpt-5.4-mini']).map((id) => ({
          id,
          object: 'model',
          created: 1700000000,
          owned_by: name,
        })),
      },
      tag,
    );

  const handler = async (x: FakeExchange<FakeOpenAiMode>): Promise<void> => {
    const { res, mode, settings, record } = x;
    const retryAfter: Record<string, string> = settings.retryAfter ? { 'retry-after': settings.retryAfter } : {};
    switch (mode) {
      case 'error500':
        return openAiError(
          res,
          settings.status ?? 500,
          'server_error',
          null,
          settings.message ?? `${name}: The server had an error while processing your request.`,
          null,
          retryAfter,
        );
      case 'rate429':
        return openAiError(
          res,
          429,
          'requests',
          'rate_limit_exceeded',
          settings.message ?? `${name}: Rate limit reached for requests.`,
          null,
          retryAfter,
        );
      case 'auth401':
        return openAiError(
          res,
          401,
          'invalid_request_error',
          'invalid_api_key',
          settings.message ?? `${name}: Incorrect API key provided.`,
        );
      case 'bad400':
        return openAiError(
          res,
          400,
          'invalid_request_error',
          settings.code ?? null,
          settings.message ?? `${name}: Invalid value for 'messages'.`,
          settings.param ?? null,
        );
      case 'notfound404':
        return openAiError(
          res,
          404,
          'invalid_request_error',
          settings.code === undefined ? 'model_not_found' : settings.code,
          settings.message ?? `The model '${record.model ?? ''}' does not exist`,
          settings.param ?? null,
        );
      case 'hang':
      case 'refuse':
        return; // hang: the socket stays open until the client or close() ends it
      case 'noPrefill':
        if (prefillOf(record.body) !== null)
          return openAiError(res, 400, 'invalid_request_error', null, `${name}: the last message must be the user's.`);
        break;
      case 'slowFirstByte':
        if (!(await x.wait(settings.delayMs ?? 1000))) return;
        break;
      case 'ok':
      case 'slowFirstToken':
      case 'stallAfterFirstChunk':
      case 'dropAfterFirstChunk':
      case 'endWithoutDone':
      case 'endWithoutFinish':
      case 'malformed':
      case 'cutAfter':
      case 'stallAfter':
        break;
    }
    const route = `${record.method} ${record.path}`;
    if (route === 'POST /v1/chat/completions') return chat(x, fake);
    if (route === 'GET /v1/models') return models(x);
    if (route === 'POST /v1/audio/speech') return speech(x, fake);
    if (route === 'POST /v1/audio/voice_consents' || route === 'POST /v1/audio/voices')
      return createVoiceThing(x, fake);
    if (record.method === 'DELETE' && /^\/v1\/audio\/(voices|voice_consents)\/[^/]+$/.test(record.path))
      return deleteVoiceThing(x, fake);
    openAiError(res, 404, 'invalid_request_error', 'unknown_url', `Unknown request URL: ${route}`);
  };

  const upstream = new FakeUpstream<FakeOpenAiMode>(options.mode ?? 'ok', handler);
  const fake: FakeOpenAi = Object.assign(upstream, {
    name,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    replyFor,
    audioChunks: options.audioChunks ?? 5,
    audioChunksSent: 0,
    voiceThings: new Map<string, { kind: 'consent' | 'voice'; fields: Record<string, string>; file: Buffer }>(),
  });
  return fake.listen('/v1');
}
