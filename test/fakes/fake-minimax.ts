import type { AudioFormat } from '../../src/audio/encoders';
import { FakeExchange, FakeUpstream, parseMultipart, sendJson, startSse } from './fake-upstream';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

export type { ModeOptions, RecordedRequest } from './fake-upstream';

/**
 * `baseRespError`: HTTP 200 with `base_resp.status_code` = settings.status (default 1004) before any audio;
 * `midStreamBaseRespError`: one audio event, then such an error event.
 */
export type FakeMiniMaxMode =
  | 'ok'
  | 'http500'
  | 'baseRespError'
  | 'midStreamBaseRespError'
  | 'hang'
  | 'slowFirstByte'
  | 'refuse';

export interface FakeMiniMaxOptions {
  name?: string;
  mode?: FakeMiniMaxMode;
  /** Pause between stream events (default 0). */
  chunkDelayMs?: number;
  /** Audio events per streamed answer (default 5). */
  chunkCount?: number;
}

export type FakeMiniMax = FakeUpstream<FakeMiniMaxMode> & {
  readonly name: string;
  chunkDelayMs: number;
  chunkCount: number;
  /** Ignore `stream_options.exclude_aggregated_audio` (older API): the final event repeats the whole clip. */
  aggregateFinal: boolean;
  /** In `baseRespError`, answer a stream request with an SSE error event instead of a JSON object. */
  errorAsEvent: boolean;
  /** Audio events written since the counter was last zeroed. */
  audioEventsSent: number;
  /** Each request's path with its query string (`?GroupId=`), in arrival order. */
  urls: string[];
  /** Files received by `/files/upload`, by file_id. */
  files: Map<number, FakeMiniMaxFile>;
  /** Voices made by voice_clone (`voice_cloning`) and voice_design (`voice_generation`), by voice_id; delete_voice removes them. */
  voices: Map<string, 'voice_cloning' | 'voice_generation'>;
  /** Async T2A tasks: task_id to the file_id of their audio. */
  tasks: Map<number, number>;
  /** While set, voice_clone waits for it before answering (a clone in flight). */
  cloneGate: Promise<void> | null;
  /** While set, a T2A request whose text matches answers HTTP 500 (some chunks of a task fail over, others not). */
  failText: RegExp | null;
};

export interface FakeMiniMaxFile {
  purpose: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** MiniMax's voice id rule: 8..256 characters, a letter first, letters/digits/-/_, not ending in - or _. */
const VOICE_ID_RULE = /^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$/;

interface T2aBody {
  text?: string;
  stream?: boolean;
  stream_options?: { exclude_aggregated_audio?: boolean };
  output_format?: 'hex' | 'url';
  audio_setting?: { sample_rate?: number; bitrate?: number; format?: AudioFormat; channel?: number };
}

const ok = { status_code: 0, status_msg: 'success' };
let sequence = 0;

/** The system voices the fake's get_voice lists (a few of MiniMax's real ids). */
export const FAKE_MINIMAX_SYSTEM_VOICES = ['male-qn-qingse', 'female-shaonv', 'English_Graceful_Lady'];

/**
 * MiniMax on 127.0.0.1: T2A v2 (hex audio in JSON, a link with `output_format: "url"`, or SSE), the async
 * T2A trio, files, voices; errors as HTTP 200 with a non-zero base_resp. Shapes checked against MiniMax's
 * public API reference (platform.minimax.io/docs/api-reference: speech-t2a-http, speech-t2a-async-query,
 * file retrieve, voice cloning and design, errorcode).
 */
export async function startFakeMiniMax(options: FakeMiniMaxOptions = {}): Promise<FakeMiniMax> {
  const name = options.name ?? 'fake-minimax';
  const tag = { 'x-fake-provider': name };
  const failure = (x: FakeExchange<FakeMiniMaxMode>): Record<string, unknown> => ({
    trace_id: `trace-${++sequence}`,
    base_resp: {
      status_code: x.settings.status ?? 1004,
      status_msg: x.settings.message ?? 'login fail: Please carry the API secret key in the Authorization field',
    },
  });

  /** A download link of a file the fake keeps (no key needed, as MiniMax's signed links). */
  const linkTo = (x: FakeExchange<FakeMiniMaxMode>, fileId: number): string =>
    `http://${x.req.headers.host ?? '127.0.0.1'}/v1/download/${fileId}`;
  /** Keeps a file the fake made; its file_id. */
  const store = (bytes: Buffer, filename: string, purpose: string): number => {
    const fileId = 300000000000000 + ++sequence;
    fake.files.set(fileId, { purpose, filename, contentType: 'application/octet-stream', bytes });
    return fileId;
  };
  const queryOf = (x: FakeExchange<FakeMiniMaxMode>): URLSearchParams =>
    new URLSearchParams((x.req.url ?? '').split('?')[1] ?? '');

  /** MiniMax's async T2A (the task is done at once here): task_id and file_id are numbers. */
  const t2aAsync = async (x: FakeExchange<FakeMiniMaxMode>): Promise<void> => {
    const body = (x.record.body ?? {}) as T2aBody;
    const audio = body.audio_setting ?? {};
    const format = audio.format ?? 'mp3';
    const bytes = await encodedTone(
      format,
      { sampleRate: audio.sample_rate ?? 32000, channels: audio.channel ?? 1, bitrate: audio.bitrate ?? 128000 },
      toneSeconds(body.text ?? ''),
    );
    const taskId = 95157322514000 + ++sequence;
    const fileId = store(bytes, `${taskId}.${format}`, 't2a_async');
    fake.tasks.set(taskId, fileId);
    sendJson(
      x.res,
      200,
      {
        task_id: taskId,
        task_token: `token-${taskId}`,
        file_id: fileId,
        usage_characters: (body.text ?? '').length,
        base_resp: ok,
      },
      tag,
    );
  };

  const t2aAsyncQuery = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const taskId = Number(queryOf(x).get('task_id'));
    const fileId = fake.tasks.get(taskId);
    if (fileId === undefined) return invalid(x, 'task_id does not exist');
    sendJson(x.res, 200, { task_id: taskId, status: 'Success', file_id: fileId, base_resp: ok }, tag);
  };

  const retrieve = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const fileId = Number(queryOf(x).get('file_id'));
    const file = fake.files.get(fileId);
    if (!file) return invalid(x, 'file_id does not exist');
    const downloadUrl = linkTo(x, fileId);
    sendJson(
      x.res,
      200,
      {
        file: {
          file_id: fileId,
          bytes: file.bytes.length,
          created_at: Math.floor(Date.now() / 1000),
          filename: file.filename,
          purpose: file.purpose,
          download_url: downloadUrl,
        },
        base_resp: ok,
      },
      tag,
    );
  };

  const download = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const file = fake.files.get(Number(x.record.path.slice('/v1/download/'.length)));
    if (!file) return sendJson(x.res, 404, { base_resp: { status_code: 404, status_msg: 'no such file' } }, tag);
    x.res.writeHead(200, { 'Content-Type': file.contentType, 'Content-Length': String(file.bytes.length), ...tag });
    x.res.end(file.bytes);
  };

  const t2a = async (x: FakeExchange<FakeMiniMaxMode>): Promise<void> => {
    const body = (x.record.body ?? {}) as T2aBody;
    const audio = body.audio_setting ?? {};
    const shape = {
      sampleRate: audio.sample_rate ?? 32000,
      channels: audio.channel ?? 1,
      bitrate: audio.bitrate ?? 128000,
    };
    const format = audio.format ?? 'mp3';
    const traceId = `trace-${++sequence}`;
    if (fake.failText?.test(body.text ?? ''))
      return sendJson(
        x.res,
        500,
        { trace_id: traceId, base_resp: { status_code: 1000, status_msg: 'unknown error' } },
        tag,
      );
    // MiniMax refuses WAV when streaming
    if (body.stream && format === 'wav')
      return sendJson(
        x.res,
        200,
        {
          trace_id: traceId,
          base_resp: { status_code: 2013, status_msg: 'invalid params, wav is not supported in stream mode' },
        },
        tag,
      );
    const seconds = toneSeconds(body.text ?? '');
    const bytes = await encodedTone(format, shape, seconds);
    const extra = {
      audio_length: Math.round(seconds * 1000),
      audio_sample_rate: shape.sampleRate,
      audio_size: bytes.length,
      bitrate: shape.bitrate,
      audio_format: format,
      audio_channel: shape.channels,
      usage_characters: (body.text ?? '').length,
    };
    if (!body.stream) {
      // output_format "url": a link to the audio (MiniMax's is signed and lasts 24 h) instead of hex
      const audioField =
        body.output_format === 'url' ? linkTo(x, store(bytes, `t2a.${format}`, 't2a')) : bytes.toString('hex');
      return sendJson(
        x.res,
        200,
        { data: { audio: audioField, status: 2 }, extra_info: extra, trace_id: traceId, base_resp: ok },
        tag,
      );
    }

    const send = startSse(x.res, tag);
    for (const [i, piece] of splitBytes(bytes, fake.chunkCount).entries()) {
      if (i > 0 && fake.chunkDelayMs > 0 && !(await x.wait(fake.chunkDelayMs))) return;
      if (x.mode === 'midStreamBaseRespError' && i === 1)
        return void (await send(null, JSON.stringify(failure(x)), true));
      if (
        !(await send(
          null,
          JSON.stringify({ data: { audio: piece.toString('hex'), status: 1 }, trace_id: traceId, base_resp: ok }),
        ))
      )
        return;
      fake.audioEventsSent++;
    }
    const aggregated = fake.aggregateFinal || body.stream_options?.exclude_aggregated_audio !== true;
    const final = {
      data: { audio: aggregated ? bytes.toString('hex') : '', status: 2 },
      extra_info: extra,
      trace_id: traceId,
      base_resp: ok,
    };
    if (fake.chunkDelayMs > 0 && !(await x.wait(fake.chunkDelayMs))) return;
    await send(null, JSON.stringify(final), true);
  };

  const voices = (x: FakeExchange<FakeMiniMaxMode>): void =>
    sendJson(
      x.res,
      200,
      {
        system_voice: FAKE_MINIMAX_SYSTEM_VOICES.map((id) => ({
          voice_id: id,
          voice_name: id,
          description: [],
          created_time: '1970-01-01',
        })),
        voice_cloning: [],
        voice_generation: [],
        base_resp: ok,
      },
      tag,
    );

  const invalid = (x: FakeExchange<FakeMiniMaxMode>, message: string): void =>
    sendJson(x.res, 200, { base_resp: { status_code: 2013, status_msg: `invalid params, ${message}` } }, tag);

  const upload = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const parts = parseMultipart(x.record.raw, x.req.headers['content-type']);
    const purpose = parts.get('purpose')?.value.toString('utf8');
    const file = parts.get('file');
    if (!purpose || !file?.filename) return invalid(x, 'purpose and file are required');
    const fileId = 300000000000000 + ++sequence;
    fake.files.set(fileId, {
      purpose,
      filename: file.filename,
      contentType: file.contentType ?? '',
      bytes: file.value,
    });
    sendJson(
      x.res,
      200,
      {
        file: {
          file_id: fileId,
          bytes: file.value.length,
          created_at: Math.floor(Date.now() / 1000),
          filename: file.filename,
          purpose,
        },
        base_resp: ok,
      },
      tag,
    );
  };

  const clone = async (x: FakeExchange<FakeMiniMaxMode>): Promise<void> => {
    const { file_id: fileId, voice_id: voiceId } = (x.record.body ?? {}) as { file_id?: number; voice_id?: string };
    if (fake.cloneGate) await fake.cloneGate;
    if (typeof fileId !== 'number' || fake.files.get(fileId)?.purpose !== 'voice_clone')
      return invalid(x, 'file_id is not an uploaded voice_clone file');
    if (typeof voiceId !== 'string' || !VOICE_ID_RULE.test(voiceId))
      return invalid(x, 'voice_id breaks the voice id rule');
    if (fake.voices.has(voiceId)) return invalid(x, 'voice_id is already used');
    fake.voices.set(voiceId, 'voice_cloning');
    sendJson(x.res, 200, { input_sensitive: false, input_sensitive_type: 0, demo_audio: '', base_resp: ok }, tag);
  };

  const design = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const {
      prompt,
      preview_text: previewText,
      voice_id: wanted,
    } = (x.record.body ?? {}) as { prompt?: string; preview_text?: string; voice_id?: string };
    if (!prompt || !previewText) return invalid(x, 'prompt and preview_text are required');
    if (previewText.length > 500) return invalid(x, 'preview_text is longer than 500 characters');
    const voiceId = wanted ?? `ttv-voice-${Date.now()}-${++sequence}`;
    if (fake.voices.has(voiceId)) return invalid(x, 'voice_id is already used');
    fake.voices.set(voiceId, 'voice_generation');
    sendJson(
      x.res,
      200,
      { trial_audio: Buffer.from('fake trial audio').toString('hex'), voice_id: voiceId, base_resp: ok },
      tag,
    );
  };

  const deleteVoice = (x: FakeExchange<FakeMiniMaxMode>): void => {
    const { voice_type: type, voice_id: voiceId } = (x.record.body ?? {}) as { voice_type?: string; voice_id?: string };
    if (!voiceId || fake.voices.get(voiceId) !== type) return invalid(x, `no ${type ?? ''} voice ${voiceId ?? ''}`);
    fake.voices.delete(voiceId);
    sendJson(
      x.res,
      200,
      { voice_id: voiceId, created_time: String(Math.floor(Date.now() / 1000)), base_resp: ok },
      tag,
    );
  };

  const handler = async (x: FakeExchange<FakeMiniMaxMode>): Promise<void> => {
    fake.urls.push(x.req.url ?? '');
    switch (x.mode) {
      case 'http500':
        return sendJson(
          x.res,
          x.settings.status ?? 500,
          { base_resp: { status_code: 1000, status_msg: x.settings.message ?? `${name}: unknown error` } },
          tag,
        );
      case 'baseRespError':
        if (fake.errorAsEvent && x.record.stream)
          return void (await startSse(x.res, tag)(null, JSON.stringify(failure(x)), true));
        return sendJson(x.res, 200, failure(x), tag);
      case 'hang':
      case 'refuse':
        return; // hang: the socket stays open until the client or close() ends it
      case 'slowFirstByte':
        if (!(await x.wait(x.settings.delayMs ?? 1000))) return;
        break;
      case 'ok':
      case 'midStreamBaseRespError':
        break;
    }
    const route = `${x.record.method} ${x.record.path}`;
    if (route === 'POST /v1/t2a_v2') return t2a(x);
    if (route === 'POST /v1/get_voice') return voices(x);
    if (route === 'POST /v1/files/upload') return upload(x);
    if (route === 'POST /v1/voice_clone') return clone(x);
    if (route === 'POST /v1/voice_design') return design(x);
    if (route === 'POST /v1/delete_voice') return deleteVoice(x);
    if (route === 'POST /v1/t2a_async_v2') return t2aAsync(x);
    if (route === 'GET /v1/query/t2a_async_query_v2') return t2aAsyncQuery(x);
    if (route === 'GET /v1/files/retrieve') return retrieve(x);
    if (x.record.method === 'GET' && x.record.path.startsWith('/v1/download/')) return download(x);
    sendJson(x.res, 404, { base_resp: { status_code: 404, status_msg: `no route ${route}` } }, tag);
  };

  const upstream = new FakeUpstream<FakeMiniMaxMode>(options.mode ?? 'ok', handler);
  const fake: FakeMiniMax = Object.assign(upstream, {
    name,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    chunkCount: options.chunkCount ?? 5,
    aggregateFinal: false,
    errorAsEvent: false,
    audioEventsSent: 0,
    urls: [] as string[],
    files: new Map<number, FakeMiniMaxFile>(),
    voices: new Map<string, 'voice_cloning' | 'voice_generation'>(),
    cloneGate: null,
    failText: null,
    tasks: new Map<number, number>(),
  });
  return fake.listen('/v1');
}
