import type { ServerResponse } from 'node:http';
import {
  FakeExchange,
  FakeUpstream,
  parseMultipart,
  sendJson,
  startSse,
  wordsOf,
  writeThenDrop,
} from './fake-upstream';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

export type { ModeOptions, RecordedRequest } from './fake-upstream';

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
  | 'endWithoutDone';

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

function openAiError(res: ServerResponse, status: number, type: string, code: string | null, message: string): void {
  sendJson(res, status, { error: { message, type, param: null, code } });
}

const countTokens = (value: unknown): number => Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));

/** An OpenAI-compatible API on 127.0.0.1 whose failures are switched by mode. */
export async function startFakeOpenAi(options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const name = options.name ?? 'fake-openai';
  const replyFor = (model: string): string => options.reply ?? `Hello from ${name} (${model}).`;
  const tag = { 'x-fake-provider': name };

  const chat = async (x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): Promise<void> => {
    const model = x.record.model ?? 'unknown';
    const text = replyFor(model);
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
    const events = [
      chunk({ role: 'assistant', content: first }, null),
      ...rest.map((word) => chunk({ content: word }, null)),
      chunk({}, 'stop'),
    ];
    const streamOptions = fields.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage)
      events.push(JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage }));
    if (x.mode !== 'endWithoutDone') events.push('[DONE]');
    for (const [i, data] of events.entries()) {
      if (i > 0 && self.chunkDelayMs > 0 && !(await x.wait(self.chunkDelayMs))) return;
      if (!(await send(null, data, i === events.length - 1))) return;
    }
  };

  const models = (x: FakeExchange<FakeOpenAiMode>): void =>
    sendJson(
      x.res,
      200,
      {
        object: 'list',
        data: (options.models ?? ['gpt-4o-mini']).map((id) => ({
          id,
          object: 'model',
          created: 1700000000,
          owned_by: name,
        })),
      },
      tag,
    );

  const speech = async (x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): Promise<void> => {
    const { response_format: format = 'mp3', input = '' } = (x.record.body ?? {}) as {
      response_format?: string;
      input?: string;
    };
    if (format === 'pcm') {
      // what OpenAI documents for pcm: 24 kHz, 16-bit signed little-endian, mono, no header, sent as it is made
      const pieces = splitBytes(
        await encodedTone('pcm', { sampleRate: 24000, channels: 1, bitrate: 0 }, toneSeconds(input)),
        self.audioChunks,
      );
      x.res.writeHead(200, { 'content-type': 'audio/pcm', ...tag });
      if (x.mode === 'dropAfterFirstChunk') return void x.res.write(pieces[0], () => x.res.socket?.destroy());
      for (const [i, piece] of pieces.entries()) {
        if (i > 0 && self.chunkDelayMs > 0 && !(await x.wait(self.chunkDelayMs))) return;
        if (x.res.destroyed) return;
        x.res.write(piece);
        self.audioChunksSent++;
      }
      return void x.res.end();
    }
    const { type, bytes } = fakeAudio(format);
    x.res.writeHead(200, { 'content-type': type, 'content-length': bytes.length, ...tag });
    x.res.end(bytes);
  };

  /** OpenAI's custom voices: a consent upload (`cons_…`), then a voice (`voice_…`) naming it; both multipart. */
  const createVoiceThing = (x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): void => {
    const parts = parseMultipart(x.record.raw, x.req.headers['content-type']);
    const text = (name: string): string | undefined => parts.get(name)?.value.toString('utf8');
    const created_at = Math.floor(Date.now() / 1000);
    if (x.record.path === '/v1/audio/voice_consents') {
      const recording = parts.get('recording');
      if (!recording?.filename || !text('language') || !text('name'))
        return openAiError(x.res, 400, 'invalid_request_error', null, 'recording, language and name are required');
      const id = `cons_${++sequence}`;
      self.voiceThings.set(id, {
        kind: 'consent',
        fields: { name: text('name') ?? '', language: text('language') ?? '' },
        file: recording.value,
      });
      return sendJson(
        x.res,
        200,
        { id, object: 'audio.voice_consent', name: text('name'), language: text('language'), created_at },
        tag,
      );
    }
    const sample = parts.get('audio_sample');
    const consent = text('consent') ?? '';
    if (!sample?.filename || !text('name'))
      return openAiError(x.res, 400, 'invalid_request_error', null, 'name and audio_sample are required');
    if (self.voiceThings.get(consent)?.kind !== 'consent')
      return openAiError(x.res, 400, 'invalid_request_error', null, `No consent recording '${consent}'`);
    const id = `voice_${++sequence}`;
    self.voiceThings.set(id, { kind: 'voice', fields: { name: text('name') ?? '', consent }, file: sample.value });
    sendJson(x.res, 200, { id, object: 'audio.voice', name: text('name'), type: 'audio_sample', created_at }, tag);
  };

  const deleteVoiceThing = (x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): void => {
    const id = decodeURIComponent(x.record.path.split('/').pop() ?? '');
    if (!self.voiceThings.delete(id))
      return openAiError(x.res, 404, 'invalid_request_error', null, `No such object '${id}'`);
    sendJson(
      x.res,
      200,
      { id, deleted: true, object: x.record.path.includes('/voices/') ? 'audio.voice.deleted' : 'audio.voice_consent' },
      tag,
    );
  };

  const handler = async (x: FakeExchange<FakeOpenAiMode>): Promise<void> => {
    const { res, mode, settings, record } = x;
    switch (mode) {
      case 'error500':
        return openAiError(
          res,
          settings.status ?? 500,
          'server_error',
          null,
          settings.message ?? `${name}: The server had an error while processing your request.`,
        );
      case 'rate429':
        return openAiError(
          res,
          429,
          'requests',
          'rate_limit_exceeded',
          settings.message ?? `${name}: Rate limit reached for requests.`,
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
          null,
          settings.message ?? `${name}: Invalid value for 'messages'.`,
        );
      case 'notfound404':
        return openAiError(
          res,
          404,
          'invalid_request_error',
          'model_not_found',
          settings.message ?? `The model '${record.model ?? ''}' does not exist`,
        );
      case 'hang':
      case 'refuse':
        return; // hang: the socket stays open until the client or close() ends it
      case 'slowFirstByte':
        if (!(await x.wait(settings.delayMs ?? 1000))) return;
        break;
      case 'ok':
      case 'dropAfterFirstChunk':
      case 'endWithoutDone':
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

/** A little audio of the requested format: enough for content-type and magic-byte checks. */
export function fakeAudio(format: string): { type: string; bytes: Buffer } {
  switch (format) {
    case 'wav': {
      const data = Buffer.alloc(4800); // 0.1 s of 24 kHz 16-bit mono silence
      const header = Buffer.alloc(44);
      header.write('RIFF', 0);
      header.writeUInt32LE(36 + data.length, 4);
      header.write('WAVEfmt ', 8);
      header.writeUInt32LE(16, 16);
      header.writeUInt16LE(1, 20);
      header.writeUInt16LE(1, 22);
      header.writeUInt32LE(24000, 24);
      header.writeUInt32LE(48000, 28);
      header.writeUInt16LE(2, 32);
      header.writeUInt16LE(16, 34);
      header.write('data', 36);
      header.writeUInt32LE(data.length, 40);
      return { type: 'audio/wav', bytes: Buffer.concat([header, data]) };
    }
    case 'flac':
      return { type: 'audio/flac', bytes: Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(64)]) };
    case 'pcm':
      return { type: 'audio/pcm', bytes: Buffer.alloc(4800) };
    case 'opus':
      return { type: 'audio/opus', bytes: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(64)]) };
    case 'aac':
      return { type: 'audio/aac', bytes: Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80]), Buffer.alloc(64)]) };
    default: {
      // three silent MPEG-1 Layer III frames, 128 kbit/s, 44.1 kHz (417 bytes each)
      const frame = Buffer.alloc(417);
      frame.writeUInt32BE(0xfffb9064, 0);
      return { type: 'audio/mpeg', bytes: Buffer.concat([frame, frame, frame]) };
    }
  }
}
