import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { once } from 'node:events';
import type { FailoverScope } from '../failover/failover-scope';
import type { PlannedStep } from '../failover/chain';
import { DomainError } from '../common/errors/domain-error';
import { audioAttachment } from '../common/http/attachment';
import { EnvironmentVariables } from '../config/env.schema';
import { FailoverService } from '../failover/failover.service';
import { AudioStream, UpstreamFailure } from '../providers/provider-adapter';
import { ignoredBy, ignoredFieldsHeader, IGNORED_FIELDS_HEADER, SpeechField } from '../providers/speech-fields';
import { assertAudioFits, audioTooLong, encodedSeconds } from './audio-cap';
import { characterCount } from './speech-job';
import type { SpeechJob } from './speech-job';
import { VoicesService } from '../voices/voices.service';

/** Audio whose first chunk is in hand: from here on the provider is fixed (no failover after the first byte). */
export interface PrimedAudio {
  audio: AudioStream;
  first: IteratorResult<Buffer>;
  rest: AsyncIterator<Buffer>;
  /** The request's fields the serving step's provider kind does not express (HONOURED_FIELDS). */
  ignored: SpeechField[];
}

/** How `respond` sends the audio: the bytes themselves, or OpenAI's speech SSE events (`stream_format: "sse"`). */
export type SpeechAnswer = 'audio' | 'openai-sse';

/** Fields `/v1/audio/speech` cannot honour whatever the step: its answer is the audio bytes, with no subtitle file. */
export function routeIgnoredFields(job: SpeechJob): string[] {
  return [
    ...(job.transport?.output_format !== undefined ? ['output_format'] : []),
    ...(job.options?.subtitle_enable !== undefined ? ['subtitle_enable'] : []),
    ...(job.options?.subtitle_type !== undefined ? ['subtitle_type'] : []),
  ];
}

const sseEvent = (event: object): Buffer => Buffer.from(`data: ${JSON.stringify(event)}\n\n`);

/** Where the audio of a synchronous speech request goes, in whatever wire format its route answers. */
export interface AudioSink {
  /** The first audio is in hand (the provider is fixed): the answer's status and headers; `ignored`: the request's fields the serving step did not use. */
  open(audio: AudioStream, ignored: SpeechField[]): void;
  write(bytes: Buffer): Promise<void>;
  /** Every chunk was written; `characters`: what the request is billed. */
  end(characters: number): void | Promise<void>;
  /** The provider failed after the first byte (`status`: what usage records); the answer must not look complete. */
  broke(reason: string, status: number, err: unknown): void;
}

/** nginx's status for a request whose client closed the connection first (usage records only), as chat records it. */
export const CLIENT_CLOSED_REQUEST = 499;

const noSpeech = (): UpstreamFailure =>
  new UpstreamFailure({ kind: 'http', status: 501, message: 'speech is not supported by this adapter' });

/** Text to speech through the failover core; the same core as chat. */
@Injectable()
export class SpeechService {
  private readonly logger = new Logger(SpeechService.name);

  constructor(
    private readonly failover: FailoverService,
    private readonly voices: VoicesService,
    private readonly env: EnvironmentVariables,
  ) {}

  /** The steps a speech request would walk (a custom voice's provider first); 400 when the model or the voice does not fit. */
  route(scope: FailoverScope, job: SpeechJob): Promise<PlannedStep[]> {
    return this.voices.route(scope.key, job);
  }

  /** Walks the chain (or only `planned`) until a step has produced its first audio bytes; `maxSeconds` caps its output. */
  async start(
    scope: FailoverScope,
    job: SpeechJob,
    planned?: PlannedStep[],
    maxSeconds?: number,
  ): Promise<PrimedAudio> {
    planned ??= await this.route(scope, job);
    const custom = await this.voices.customVoice(scope.key, job.voiceId);
    return this.failover.execute<PrimedAudio>(
      scope,
      job.model,
      async (adapter, ctx, step) => {
        if (!adapter.speech) throw noSpeech();
        const voice = custom
          ? await this.voices.customVoiceFor(step, adapter, custom)
          : { voiceId: await this.voices.voiceFor(step, adapter, job.voiceId), custom: false, substitution: null };
        // attempts run one after another: the serving one's note is the one left
        scope.alertNote = voice.substitution;
        const call = {
          text: job.text,
          voiceId: voice.voiceId,
          speed: job.speed,
          vol: job.vol,
          pitch: job.pitch,
          output: job.output,
          ...(maxSeconds !== undefined ? { maxSeconds } : {}),
        };
        const extra = {
          ...(voice.custom ? { customVoice: true } : {}),
          ...(job.instructions ? { instructions: job.instructions } : {}),
          ...(job.options ? { options: job.options } : {}),
        };
        const audio = await adapter.speech({ ...call, ...extra }, ctx);
        const rest = audio.chunks[Symbol.asyncIterator]();
        return { audio, first: await rest.next(), rest, ignored: ignoredBy(adapter.kind, job) };
      },
      planned,
    );
  }

  /**
   * Synchronous speech: bytes go to the client as the provider produces them (`openai-sse`: each as a
   * `speech.audio.delta` event, then `speech.audio.done`). `x-svc-ignored-fields` names what was not used.
   */
  async respond(scope: FailoverScope, job: SpeechJob, res: Response, answer: SpeechAnswer = 'audio'): Promise<void> {
    const sse = answer === 'openai-sse';
    // a client that leaves while its socket is full never drains: its abort ends the wait
    const write = async (bytes: Buffer): Promise<void> => {
      if (!res.write(bytes)) await once(res, 'drain', { signal: scope.signal });
    };
    await this.deliver(scope, job, {
      open: (audio, ignoredFields) => {
        res.status(200);
        res.setHeader('Content-Type', sse ? 'text/event-stream' : audio.contentType);
        if (!sse) res.setHeader('Content-Disposition', audioAttachment(`speech-${scope.requestId}`, audio.contentType));
        if (sse) res.setHeader('Cache-Control', 'no-cache');
        if (job.output.format === 'mp3')
          res.setHeader('x-svc-audio-bitrate', String(audio.bitrate ?? job.output.bitrate));
        const ignored = ignoredFieldsHeader([...ignoredFields, ...routeIgnoredFields(job)]);
        if (ignored) res.setHeader(IGNORED_FIELDS_HEADER, ignored);
        scope.applyHeaders(res);
      },
      write: (bytes) => write(sse ? sseEvent({ type: 'speech.audio.delta', audio: bytes.toString('base64') }) : bytes),
      end: async (characters) => {
        // OpenAI counts tokens; the gateway's unit is characters, reported as input tokens
        if (sse)
          await write(
            sseEvent({
              type: 'speech.audio.done',
              usage: { input_tokens: characters, output_tokens: 0, total_tokens: characters },
            }),
          );
        res.end();
      },
      broke: (reason, status, err) => {
        if (sse) {
          // SSE's explicit end (decisions §3): an error event, and no speech.audio.done
          const domain =
            err instanceof DomainError
              ? err
              : new DomainError(
                  'all_providers_failed',
                  `${scope.served?.provider ?? 'The provider'} failed mid-stream: ${reason}.`,
                );
          res.end(sseEvent(domain.toBody()));
          return;
        }
        // never a silent truncation: the chunked body is cut without its terminator, which clients report as an error;
        // on the next turn, once Node has uncorked the status, headers and audio already written (else the client sees none of them)
        setImmediate(() => res.destroy(new Error(`upstream failed mid-stream: ${reason}`)));
      },
    });
  }

  /**
   * The life of one synchronous speech request, whatever carries its audio (the audio body, OpenAI's SSE,
   * MiniMax's JSON or SSE): the cap, the chain until the first audio, then every chunk to `sink`, the
   * client's departure and a failure after the first byte, and the request's usage, recorded once.
   */
  async deliver(scope: FailoverScope, job: SpeechJob, sink: AudioSink): Promise<void> {
    scope.streaming = true;
    const limit = this.env.SVC_MAX_AUDIO_SECONDS;
    assertAudioFits(job.text, job.speed, limit);
    const primed = await this.start(scope, job, undefined, limit);
    sink.open(primed.audio, primed.ignored);
    let sent = 0;
    const bitrate = primed.audio.bitrate ?? job.output.bitrate;
    const send = async (bytes: Buffer): Promise<void> => {
      // the cap also holds for audio an upstream sends as it is (counted by the worker where the gateway makes it)
      sent += bytes.length;
      if ((encodedSeconds(sent, job.output, bitrate) ?? 0) > limit) throw audioTooLong(limit, 'of this request');
      if (bytes.length > 0) await sink.write(bytes);
    };
    try {
      if (!primed.first.done) await send(primed.first.value);
      for (let next = await primed.rest.next(); !next.done && !scope.aborted; next = await primed.rest.next())
        await send(next.value);
      // the offline engine ends its stream early, without an error, when the client leaves
      if (scope.aborted) {
        scope.finish({ status: CLIENT_CLOSED_REQUEST, characters: characterCount(job.text) });
        return;
      }
      const characters = characterCount(job.text);
      await sink.end(characters);
      scope.finish({ status: 200, characters });
    } catch (err) {
      if (scope.aborted) {
        scope.finish({ status: CLIENT_CLOSED_REQUEST, characters: characterCount(job.text) });
        return;
      }
      const reason = this.failover.streamFailed(scope, err);
      this.logger.warn(
        `speech from ${scope.served?.provider ?? '?'} broke after the first byte (${reason}) for ${scope.requestId}`,
      );
      const status = err instanceof DomainError ? err.status : 502;
      sink.broke(reason, status, err);
      scope.finish({ status, characters: characterCount(job.text) });
    } finally {
      // a stream cut short closes the provider call and ends its encoder (a no-op on one that ran to its end)
      await primed.rest.return?.().catch(() => undefined);
    }
  }
}
