import { FakeExchange, FakeUpstream, sendJson } from './fake-upstream';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

export type { ModeOptions, RecordedRequest } from './fake-upstream';

export type FakeElevenLabsMode =
  | 'ok'
  | 'http500'
  | 'auth401'
  | 'hang'
  | 'slowFirstByte'
  | 'dropAfterFirstChunk'
  | 'refuse';

export interface FakeElevenLabsOptions {
  name?: string;
  mode?: FakeElevenLabsMode;
  /** Pause between audio writes (default 0). */
  chunkDelayMs?: number;
  /** Writes per answer (default 5). */
  audioChunks?: number;
}

export type FakeElevenLabs = FakeUpstream<FakeElevenLabsMode> & {
  readonly name: string;
  chunkDelayMs: number;
  audioChunks: number;
  /** Audio writes made since the counter was last zeroed. */
  audioChunksSent: number;
  /** Each request's path with its query string (`?output_format=`), in arrival order. */
  urls: string[];
};

/** The PCM rates the real API streams (`pcm_<rate>`); anything else is refused as ElevenLabs does. */
const PCM_RATES = new Set([8000, 16000, 22050, 24000, 44100, 48000]);
const STREAM_PATH = /^\/v1\/text-to-speech\/([^/]+)\/stream$/;

function elevenLabsError(x: FakeExchange<FakeElevenLabsMode>, status: number, code: string, message: string): void {
  sendJson(x.res, status, { detail: { status: code, message } });
}

/** ElevenLabs' streaming TTS on 127.0.0.1: raw S16LE mono at the rate `output_format=pcm_<rate>` names. */
export async function startFakeElevenLabs(options: FakeElevenLabsOptions = {}): Promise<FakeElevenLabs> {
  const name = options.name ?? 'fake-elevenlabs';

  const stream = async (x: FakeExchange<FakeElevenLabsMode>): Promise<void> => {
    const query = new URL(x.req.url ?? '/', 'http://fake').searchParams;
    const rate = /^pcm_(\d+)$/.exec(query.get('output_format') ?? '');
    if (!rate || !PCM_RATES.has(Number(rate[1])))
      return elevenLabsError(
        x,
        422,
        'invalid_output_format',
        `output_format ${query.get('output_format')} is not offered by this fake`,
      );
    const { text = '' } = (x.record.body ?? {}) as { text?: string };
    const pieces = splitBytes(
      await encodedTone('pcm', { sampleRate: Number(rate[1]), channels: 1, bitrate: 0 }, toneSeconds(text)),
      fake.audioChunks,
    );
    x.res.writeHead(200, { 'content-type': 'audio/pcm', 'x-fake-provider': name });
    if (x.mode === 'dropAfterFirstChunk') return void x.res.write(pieces[0], () => x.res.socket?.destroy());
    for (const [i, piece] of pieces.entries()) {
      if (i > 0 && fake.chunkDelayMs > 0 && !(await x.wait(fake.chunkDelayMs))) return;
      if (x.res.destroyed) return;
      x.res.write(piece);
      fake.audioChunksSent++;
    }
    x.res.end();
  };

  const handler = async (x: FakeExchange<FakeElevenLabsMode>): Promise<void> => {
    fake.urls.push(x.req.url ?? '');
    switch (x.mode) {
      case 'http500':
        return elevenLabsError(
          x,
          x.settings.status ?? 500,
          'internal_error',
          x.settings.message ?? `${name}: internal server error`,
        );
      case 'auth401':
        return elevenLabsError(x, 401, 'invalid_api_key', x.settings.message ?? 'Invalid API key');
      case 'hang':
      case 'refuse':
        return; // hang: the socket stays open until the client or close() ends it
      case 'slowFirstByte':
        if (!(await x.wait(x.settings.delayMs ?? 1000))) return;
        break;
      case 'ok':
      case 'dropAfterFirstChunk':
        break;
    }
    if (x.record.method === 'POST' && STREAM_PATH.test(x.record.path)) return stream(x);
    if (x.record.method === 'GET' && x.record.path === '/v1/models') {
      return sendJson(x.res, 200, [
        { model_id: 'eleven_multilingual_v2', name: 'Eleven Multilingual v2', can_do_text_to_speech: true },
      ]);
    }
    elevenLabsError(x, 404, 'not_found', `no route ${x.record.method} ${x.record.path}`);
  };

  const upstream = new FakeUpstream<FakeElevenLabsMode>(options.mode ?? 'ok', handler);
  const fake: FakeElevenLabs = Object.assign(upstream, {
    name,
    chunkDelayMs: options.chunkDelayMs ?? 0,
    audioChunks: options.audioChunks ?? 5,
    audioChunksSent: 0,
    urls: [] as string[],
  });
  return fake.listen('/v1');
}
