import type { AudioFormat } from '../../src/audio/encoders';
import { FakeExchange, FakeUpstream, sendJson, startSse } from './fake-upstream';
import { linkTo, minimaxStateRoutes, ok, storeFile } from './fake-minimax-state';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

export { FAKE_MINIMAX_SYSTEM_VOICES } from './fake-minimax-state';

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
  /** How many more matching requests `failText` fails (null: every one); each failure counts down. */
  failTextTimes: number | null;
  /** While true, delete_voice fails (base_resp 1000) and keeps the voice: a provider that cannot delete right now. */
  refuseDeletes: boolean;
};

export interface FakeMiniMaxFile {
  purpose: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface T2aBody {
  text?: string;
  stream?: boolean;
  stream_options?: { exclude_aggregated_audio?: boolean };
  output_format?: 'hex' | 'url';
  audio_setting?: { sample_rate?: number; bitrate?: number; format?: AudioFormat; channel?: number };
}

let sequence = 0;

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
    if (fake.failText?.test(body.text ?? '') && (fake.failTextTimes === null || fake.failTextTimes-- > 0))
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
        body.output_format === 'url'
          ? linkTo(x, storeFile(fake, bytes, `t2a.${format}`, 't2a'))
          : bytes.toString('hex');
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
    const state = x.record.path.startsWith('/v1/download/')
      ? routes[`${x.record.method} /v1/download/`]
      : routes[route];
    if (state) return state(x);
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
    failTextTimes: null,
    refuseDeletes: false,
    tasks: new Map<number, number>(),
  });
  const routes = minimaxStateRoutes(fake, tag);
  return fake.listen('/v1');
}
