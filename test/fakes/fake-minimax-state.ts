import { FakeExchange, parseMultipart, sendJson } from './fake-upstream';
import type { FakeMiniMax, FakeMiniMaxMode, T2aBody } from './fake-minimax';
import { encodedTone, toneSeconds } from './speech-audio';

/** MiniMax's voice id rule: 8..256 characters, a letter first, letters/digits/-/_, not ending in - or _. */
const VOICE_ID_RULE = /^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$/;

export const ok = { status_code: 0, status_msg: 'success' };
let sequence = 0;

/** The system voices the fake's get_voice lists (a few of MiniMax's real ids). */
export const FAKE_MINIMAX_SYSTEM_VOICES = ['male-qn-qingse', 'female-shaonv', 'English_Graceful_Lady'];

/** A download link of a file the fake keeps (no key needed, as MiniMax's signed links). */
export const linkTo = (x: FakeExchange<FakeMiniMaxMode>, fileId: number): string =>
  `http://${x.req.headers.host ?? '127.0.0.1'}/v1/download/${fileId}`;

/** Keeps a file the fake made; its file_id. */
export function storeFile(fake: FakeMiniMax, bytes: Buffer, filename: string, purpose: string): number {
  const fileId = 300000000000000 + ++sequence;
  fake.files.set(fileId, { purpose, filename, contentType: 'application/octet-stream', bytes });
  return fileId;
}

type Route = (x: FakeExchange<FakeMiniMaxMode>) => void | Promise<void>;

/**
 * The fake MiniMax's routes that keep state in `fake.files`, `fake.voices` and `fake.tasks`: files (upload, retrieve,
 * download), voices (get_voice, voice_clone, voice_design, delete_voice) and the async T2A pair; by `METHOD /path`,
 * downloads under `GET /v1/download/`. Synchronous and streamed T2A: fake-minimax.ts.
 */
export function minimaxStateRoutes(fake: FakeMiniMax, tag: Record<string, string>): Record<string, Route> {
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
    const fileId = storeFile(fake, bytes, `${taskId}.${format}`, 't2a_async');
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
    if (fake.refuseDeletes)
      return sendJson(x.res, 200, { base_resp: { status_code: 1000, status_msg: 'unknown error' } }, tag);
    if (!voiceId || fake.voices.get(voiceId) !== type) return invalid(x, `no ${type ?? ''} voice ${voiceId ?? ''}`);
    fake.voices.delete(voiceId);
    sendJson(
      x.res,
      200,
      { voice_id: voiceId, created_time: String(Math.floor(Date.now() / 1000)), base_resp: ok },
      tag,
    );
  };

  return {
    'POST /v1/get_voice': voices,
    'POST /v1/files/upload': upload,
    'POST /v1/voice_clone': clone,
    'POST /v1/voice_design': design,
    'POST /v1/delete_voice': deleteVoice,
    'POST /v1/t2a_async_v2': t2aAsync,
    'GET /v1/query/t2a_async_query_v2': t2aAsyncQuery,
    'GET /v1/files/retrieve': retrieve,
    'GET /v1/download/': download,
  };
}
