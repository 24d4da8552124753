/** MiniMax's replies read: base_resp errors into UpstreamFailures, hex audio (whole or streamed) into bytes. */
import { MINIMAX_CODES } from '../common/errors/minimax-codes';
import { Readable } from 'node:stream';
import { parseFirstMp3Frame } from '../audio/parse';
import { SpeechOutput, UpstreamFailure } from './provider-adapter';
import { isRecord, parseJsonBody, SseEvent, StreamStep, UPSTREAM_JSON_CAP } from './http';

/** base_resp codes that blame the request (2013 invalid parameters, 1026 sensitive content), not the provider. */
const REQUEST_FAULTS: ReadonlySet<number | string> = new Set([
  MINIMAX_CODES.invalidParams,
  MINIMAX_CODES.sensitiveContent,
]);

/** A voice call's base_resp: a request fault is a 400, anything else the provider's failure. */
export function throwOnVoiceReply(reply: Record<string, unknown>): void {
  try {
    throwOnBaseResp(reply);
  } catch (err) {
    const outcome = (err as UpstreamFailure).outcome;
    if (outcome.kind === 'provider_error' && REQUEST_FAULTS.has(outcome.code)) {
      throw new UpstreamFailure({
        kind: 'http',
        status: 400,
        message: `${outcome.message ?? 'invalid request'} (MiniMax ${outcome.code})`,
      });
    }
    throw err;
  }
}

/** MiniMax answers HTTP 200 even for failures; `base_resp.status_code` (e.g. 1004 auth, 1002 rate limit) says so. */
export function throwOnBaseResp(reply: Record<string, unknown>): void {
  const base = reply.base_resp;
  if (!isRecord(base) || base.status_code === 0 || base.status_code === undefined) return;
  const code =
    typeof base.status_code === 'number' || typeof base.status_code === 'string' ? base.status_code : 'unknown';
  const message = typeof base.status_msg === 'string' && base.status_msg ? base.status_msg : undefined;
  throw new UpstreamFailure({
    kind: 'provider_error',
    code,
    ...(message ? { message } : {}),
    ...(REQUEST_FAULTS.has(code) ? { requestFault: true } : {}),
  });
}

function hexAudio(value: unknown): Buffer | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const bytes = Buffer.from(value, 'hex');
  if (bytes.length * 2 !== value.length)
    throw new UpstreamFailure({
      kind: 'provider_error',
      code: 'invalid_response',
      message: 'MiniMax sent audio that is not hex',
    });
  return bytes;
}

export const noAudio = (): UpstreamFailure =>
  new UpstreamFailure({ kind: 'provider_error', code: 'no_audio', message: 'MiniMax finished without audio' });

/** The whole clip from a non-streaming reply (`data.audio`, hex). */
export function replyAudio(reply: Record<string, unknown>): Buffer {
  throwOnBaseResp(reply);
  const audio = hexAudio(isRecord(reply.data) ? reply.data.audio : undefined);
  if (!audio) throw noAudio();
  return audio;
}

/**
 * A streamed reply read as it comes: `translate` each event (`status` 1 carries a hex chunk; `status` 2, with
 * `extra_info`, ends the stream and, unless `exclude_aggregated_audio` took effect, repeats the whole clip, which
 * is only used when no chunk came before), then `chunks` hands out the audio. A JSON answer in place of the
 * stream (MiniMax's errors) is one such event: its base_resp error fails the stream before any audio.
 */
export class StreamedAudio {
  private emitted = false;
  private wholeClip: Buffer | undefined;

  readonly translate = (event: SseEvent): StreamStep<Buffer> => {
    const reply = parseJsonBody(event.data);
    throwOnBaseResp(reply);
    const data = isRecord(reply.data) ? reply.data : {};
    if (data.status === 2 || isRecord(reply.extra_info)) {
      if (!this.emitted) this.wholeClip = hexAudio(data.audio);
      return 'end';
    }
    const audio = hexAudio(data.audio);
    if (audio) this.emitted = true;
    return audio;
  };

  /** The translated events' audio, then the whole clip if only the final event carried it; no audio at all fails. */
  async *chunks(events: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    yield* events;
    if (this.wholeClip) yield this.wholeClip;
    else if (!this.emitted) throw noAudio();
  }
}

/** The longest clip a reply may carry whole (hex in one JSON reply or one SSE event): the sync speech audio cap's default. */
const WHOLE_CLIP_SECONDS = 1800;

/** Bounds a MiniMax reply that may hold the whole clip in hex: that many seconds of 16-bit PCM in the requested shape. */
export function wholeClipCap(output: SpeechOutput): number {
  return Math.max(UPSTREAM_JSON_CAP, WHOLE_CLIP_SECONDS * output.sampleRate * output.channels * 2 * 2);
}

/** A one-chunk stream: the whole clip of a non-streaming reply. */
export const once = (chunk: Buffer): AsyncIterable<Buffer> => Readable.from([chunk]);

/** Replays the chunk already read, then the rest. */
export async function* startingWith(first: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield first;
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
  } finally {
    await rest.return?.();
  }
}

/** MiniMax may encode at another bitrate than asked (e.g. 256 kbps is beyond MPEG-2 rates): the first frame says. */
export function mp3BitrateOf(first: Buffer): number | undefined {
  try {
    return parseFirstMp3Frame(first).bitrate;
  } catch {
    return undefined; // the first chunk held no whole frame: the request's bitrate stands
  }
}
