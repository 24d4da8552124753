import type { RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import { packSentences, splitSentences } from '../audio/sentences';
import { jobOwner, transcodeStream } from '../audio/pool/pool-jobs';
import { outputShape } from '../audio/transcoder';
import { realtimePcm } from './openai-realtime';
import { type AudioStream, type CallContext, type SpeechCall, UpstreamFailure } from './provider-adapter';
import { emotionInstruction, REALTIME_SPEED_RANGE } from './speech-fields';
import type { UpstreamExecutor } from './upstream-executor';

/** What the Realtime API makes: 16-bit PCM at 24 kHz, mono (`audio/pcm`, "only a 24kHz sample rate is supported"). */
export const REALTIME_PCM = { sampleRate: 24000, channels: 1 } as const;

/** The text of one response at most: well inside a response's output tokens, a sentence boundary at each end. */
export const REALTIME_PIECE_CHARS = 1000;

/** The session's instructions: a realtime model answers by default; here it must only read the text aloud. */
export const VERBATIM_INSTRUCTIONS =
  'You are a text-to-speech voice. Read each user message aloud exactly as written, word for word, in the ' +
  'language it is written in. Do not answer it, comment on it, translate, summarise, add or leave out anything, ' +
  'and say nothing else.';

/** The session of one speech call: its voice (a custom one as `{id}`), 24 kHz PCM out, no turn detection. */
export function realtimeSession(call: SpeechCall, model: string): RealtimeSessionCreateRequest {
  const emotion = call.options?.voice_setting?.emotion;
  const style = [call.instructions, emotion ? emotionInstruction(emotion) : undefined].filter(Boolean).join(' ');
  const [min, max] = REALTIME_SPEED_RANGE;
  const speed = Math.min(max, Math.max(min, call.speed));
  return {
    type: 'realtime',
    model,
    output_modalities: ['audio'],
    instructions: style ? `${VERBATIM_INSTRUCTIONS} How to speak: ${style}` : VERBATIM_INSTRUCTIONS,
    audio: {
      input: { turn_detection: null },
      output: {
        format: { type: 'audio/pcm', rate: 24000 },
        voice: call.customVoice ? { id: call.voiceId } : call.voiceId,
        ...(speed !== 1 ? { speed } : {}),
      },
    },
  };
}

/** The text as the pieces read one response each, cut at sentence boundaries. */
export function realtimePieces(text: string): string[] {
  return packSentences(splitSentences(text, REALTIME_PIECE_CHARS), REALTIME_PIECE_CHARS);
}

/**
 * Speech of an `openai` step with a realtime model: the Realtime session's PCM, made into exactly `call.output`
 * (format, rate, channels; `vol` as a gain) by the audio workers, as the `/audio/speech` path does with its pcm.
 * The session's WebSocket is the provider's executor's (`upstream`), its upgrade carrying `headers` (the key).
 */
export function realtimeSpeech(
  upstream: UpstreamExecutor,
  headers: Record<string, string>,
  call: SpeechCall,
  ctx: CallContext,
): AudioStream {
  // the Realtime API makes PCM, G.711 or nothing: aac is never routed here (stepsMaking), this is the backstop
  if (call.output.format === 'aac')
    throw new UpstreamFailure({ kind: 'http', status: 400, message: 'the Realtime API does not make aac' });
  const pcm = realtimePcm(upstream, {
    model: ctx.model,
    headers,
    session: realtimeSession(call, ctx.model),
    pieces: realtimePieces(call.text),
    signal: ctx.signal,
  });
  return {
    ...outputShape(call.output),
    chunks: transcodeStream(pcm, REALTIME_PCM, call.output, {
      gain: call.vol,
      maxSeconds: call.maxSeconds,
      owner: jobOwner(ctx),
    }),
  };
}
