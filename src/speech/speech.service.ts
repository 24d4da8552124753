import { Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError } from '../common/errors/domain-error';
import { audioAttachment } from '../common/http/attachment';
import { EnvironmentVariables } from '../config/env.schema';
import type { ChunkSink, Primed, ProxiedCall } from '../failover/proxied-call';
import type { Attempt } from '../failover/attempt-records';
import type { AuthenticatedKey } from '../keys/key-directory';
import { outputShape } from '../audio/transcoder';
import { AudioStream, UpstreamFailure, type SpeechOutput } from '../providers/provider-adapter';
import {
  ignoredBy,
  ignoredFieldsHeader,
  IGNORED_FIELDS_HEADER,
  SpeechField,
  speedFor,
} from '../providers/speech-fields';
import { assertAudioFits, audioTooLong, encodedSeconds } from './audio-cap';
import { characterCount } from './speech-job';
import type { SpeechJob } from './speech-job';
import type { VoicePlan } from '../voices/voice-plan';
import { VoicesService } from '../voices/voices.service';
import { AdapterRegistry } from '../providers/adapter-registry';
import { stepsMaking } from './speech-formats';
import { unspokenText } from './unspoken-text';
import { EncodedAcrossSteps } from './encoded-across-steps';

/** Audio whose first chunk is in hand: from here on the provider is fixed (no failover after the first byte). */
export interface PrimedAudio extends Primed<Buffer> {
  audio: AudioStream;
  /** The request's fields the serving step's provider kind does not express (HONOURED_FIELDS). */
  ignored: SpeechField[];
}

/**
 * How far an answer's audio got, for its continuation after a break (decisions §7, speech that does not break):
 * `seconds` of the serving attempt's audio already sent; `continued` when a later step took the rest over.
 */
export interface HeardSoFar {
  seconds(): number;
  continued(next: PrimedAudio): void;
}

/** How an answer may be continued after a break: how far it got, and the output its steps are asked for. */
export interface Continuation {
  heard: HeardSoFar;
  /** Set when the steps make something else than the job's format (pcm, encoded by the caller across the steps). */
  output?: SpeechOutput;
}

/**
 * What `synthesize` may be told besides the job: the voices planned earlier (a stream's task), a cap on the
 * provider's output, and, where the answer's format lets a later step's audio follow on, how far it got
 * (`heard`), or `continuation`, decided from the plan once the steps are known.
 */
export interface SynthesisOptions {
  plan?: VoicePlan;
  maxSeconds?: number;
  heard?: HeardSoFar;
  continuation?: (plan: VoicePlan) => Continuation | null;
}

/** Formats whose audio from a second step can follow the first in one answer (no header, no stream-wide state). */
const FOLLOWING_FORMATS: ReadonlySet<string> = new Set(['mp3', 'pcm', 'pcmu_raw']);

/**
 * Formats with a header or a state over the whole stream (FLAC's STREAMINFO, Ogg's serial and page numbers): a
 * sync answer that may be continued asks every step for pcm and encodes it here, through one encoder (decisions §7).
 */
const ENCODED_HERE_FORMATS: ReadonlySet<string> = new Set(['flac', 'opus']);

/** How `respond` sends the audio: the bytes themselves, or OpenAI's speech SSE events (`stream_format: "sse"`). */
export type SpeechAnswer = 'audio' | 'openai-sse';

/**
 * Fields a sync speech route cannot honour whatever the step: no answer carries a subtitle file, and
 * `/v1/audio/speech` answers with the audio bytes whatever `output_format` says (MiniMax's `/v1/t2a_v2` honours it).
 */
export function routeIgnoredFields(job: SpeechJob, honoursOutputFormat = false): string[] {
  return [
    ...(job.transport?.output_format !== undefined && !honoursOutputFormat ? ['output_format'] : []),
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

const noSpeech = (): UpstreamFailure =>
  new UpstreamFailure({ kind: 'http', status: 501, message: 'speech is not supported by this adapter' });

/** Text to speech through the failover core; the same core as chat. */
@Injectable()
export class SpeechService {
  constructor(
    private readonly voices: VoicesService,
    private readonly env: EnvironmentVariables,
    private readonly adapters: AdapterRegistry,
  ) {}

  /**
   * The steps a speech request would walk (a custom voice's provider first) and their voices; 400 when the model, a
   * voice or the format does not fit.
   */
  plan(key: AuthenticatedKey, job: SpeechJob): Promise<VoicePlan> {
    return this.voices.plan(key, job, (steps) =>
      stepsMaking(job.output.format, steps, (provider) => this.adapters.get(provider)?.kind),
    );
  }

  /**
   * Every speech path's synthesis (sync answers, the stream's turns, task chunks): the chain until a step has
   * produced its first audio, then every chunk to `sink`, through the call's one lifecycle; billed by characters.
   */
  async synthesize(
    call: ProxiedCall,
    job: SpeechJob,
    sink: ChunkSink<Buffer, PrimedAudio>,
    options: SynthesisOptions = {},
  ): Promise<void> {
    call.bill({ characters: characterCount(job.text) });
    // a plan made earlier still has to hold: a voice deleted since does not speak again
    const plan = options.plan ? await this.voices.confirm(call.key, options.plan) : await this.plan(call.key, job);
    const { maxSeconds } = options;
    const continuation = options.continuation
      ? options.continuation(plan)
      : options.heard
        ? { heard: options.heard }
        : null;
    /** The job as its steps are asked for it (a format encoded by the caller: as pcm of the same rate and channels). */
    const asked: SpeechJob = continuation?.output ? { ...job, output: continuation.output } : job;
    /** The text the serving attempt speaks: the job's, or the rest of it once a later step took over. */
    let speaking = job.text;
    const heard = continuation?.heard;
    const continued: ChunkSink<Buffer, PrimedAudio> = heard
      ? {
          ...sink,
          // the rest of the text, from the sentence being spoken, on the later steps (each with its own voice)
          continueAfter: async (_err, reason) => {
            const rest: SpeechJob = { ...asked, text: unspokenText(speaking, heard.seconds(), job.speed) };
            const next = await call.continueStream(reason, this.attempt(call, rest, plan, maxSeconds), () => true);
            if (next) {
              speaking = rest.text;
              heard.continued(next);
            }
            return next;
          },
        }
      : sink;
    await call.stream<Buffer, PrimedAudio>(
      job.model,
      this.attempt(call, asked, plan, maxSeconds),
      continued,
      plan.steps,
    );
  }

  /** One attempt of `job` on a step of `plan`: that step's voices, resolved once its first audio is in hand. */
  attempt(call: ProxiedCall, job: SpeechJob, plan: VoicePlan, maxSeconds?: number): Attempt<PrimedAudio> {
    return async (adapter, ctx, step) => {
      if (!adapter.speech) throw noSpeech();
      const voice = plan.at(step);
      // attempts run one after another: the serving one's note is the one left
      call.scope.alertNote = voice.substitution;
      const request = {
        text: job.text,
        voiceId: voice.voiceId,
        speed: speedFor(adapter.kind, job.speed),
        vol: job.vol,
        pitch: job.pitch,
        output: job.output,
        ...(maxSeconds !== undefined ? { maxSeconds } : {}),
        ...(voice.custom ? { customVoice: true } : {}),
        ...(job.instructions ? { instructions: job.instructions } : {}),
        // every voice id in them is the step's own (VoicesService.plan)
        ...(voice.options ? { options: voice.options } : {}),
      };
      const audio = await adapter.speech(request, ctx);
      const rest = audio.chunks[Symbol.asyncIterator]();
      return { audio, first: await rest.next(), rest, ignored: ignoredBy(adapter.kind, job) };
    };
  }

  /**
   * Synchronous speech: bytes go to the client as the provider produces them (`openai-sse`: each as a
   * `speech.audio.delta` event, then `speech.audio.done`). `x-svc-ignored-fields` names what was not used.
   */
  async respond(call: ProxiedCall, job: SpeechJob, res: Response, answer: SpeechAnswer = 'audio'): Promise<void> {
    const sse = answer === 'openai-sse';
    // a client that stops reading is dropped after the stall limit; one that leaves ends the wait by its abort
    const write = async (bytes: Buffer): Promise<void> => {
      if (!res.write(bytes)) await call.drained(this.env.SVC_HTTP_STALL_MS);
    };
    await this.deliver(call, job, {
      open: (audio, ignoredFields) => {
        res.status(200);
        res.setHeader('Content-Type', sse ? 'text/event-stream' : audio.contentType);
        if (!sse) res.setHeader('Content-Disposition', audioAttachment(`speech-${call.requestId}`, audio.contentType));
        if (sse) res.setHeader('Cache-Control', 'no-cache');
        if (job.output.format === 'mp3')
          res.setHeader('x-svc-audio-bitrate', String(audio.bitrate ?? job.output.bitrate));
        const ignored = ignoredFieldsHeader([...ignoredFields, ...routeIgnoredFields(job)]);
        if (ignored) res.setHeader(IGNORED_FIELDS_HEADER, ignored);
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
                  `${call.scope.served?.provider ?? 'The provider'} failed mid-stream: ${reason}.`,
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
   * One synchronous speech request, whatever carries its audio (the audio body, OpenAI's SSE, MiniMax's JSON
   * or SSE): the audio cap, predicted before the chain and counted on the bytes, then `synthesize` to `sink`.
   * A break after the first audio is continued on a later step (decisions §7, speech that does not break): mp3,
   * pcm and pcmu_raw as the steps make them; flac and opus, when a later step can speak, as pcm from every step
   * through one encoder in the audio pool (`EncodedAcrossSteps`), so the client gets one valid stream. A one-step chain
   * keeps the step's own flac or opus: nothing could continue it, and it costs no encoding here. wav and
   * pcmu_wav are only ever made whole (their header holds the length), so a break in them is before any byte.
   */
  async deliver(call: ProxiedCall, job: SpeechJob, sink: AudioSink): Promise<void> {
    const limit = this.env.SVC_MAX_AUDIO_SECONDS;
    assertAudioFits(job.text, job.speed, limit);
    let sent = 0;
    let bitrate = job.output.bitrate;
    /** What the steps make: the job's output, or pcm of its rate and channels when encoded here. */
    let made: SpeechOutput = job.output;
    let encoded: EncodedAcrossSteps | null = null;
    /** Bytes of the serving attempt's audio received (where a break fell): exact seconds for pcm. */
    let heardBytes = 0;
    const heard: HeardSoFar = {
      seconds: () => encodedSeconds(heardBytes, made, bitrate) ?? 0,
      continued: (next) => {
        heardBytes = 0;
        bitrate = next.audio.bitrate ?? bitrate;
        encoded?.nextStep();
      },
    };
    const continuation = (plan: VoicePlan): Continuation | null => {
      const { format } = job.output;
      if (FOLLOWING_FORMATS.has(format)) return { heard };
      // only a later step could continue: a chain of one keeps its step's own encoding
      if (!ENCODED_HERE_FORMATS.has(format) || plan.steps.filter((step) => plan.canSpeak(step)).length < 2) return null;
      made = { ...job.output, format: 'pcm' };
      return { heard, output: made };
    };
    try {
      await this.synthesize(
        call,
        job,
        {
          open: (primed) => {
            bitrate = primed.audio.bitrate ?? bitrate;
            if (made.format !== job.output.format) {
              // the encoder's pool slot is taken once audio is in hand, not while the chain is walked
              encoded = new EncodedAcrossSteps(job.output, call.key.id);
              sink.open({ ...primed.audio, ...outputShape(job.output) }, primed.ignored);
              return;
            }
            sink.open(primed.audio, primed.ignored);
          },
          write: async (bytes) => {
            // the cap also holds for audio an upstream sends as it is (counted by the worker where the gateway makes it)
            sent += bytes.length;
            heardBytes += bytes.length;
            if ((encodedSeconds(sent, made, bitrate) ?? 0) > limit) throw audioTooLong(limit, 'of this request');
            const out = encoded ? await encoded.push(bytes) : bytes;
            if (out.length > 0) await sink.write(out);
          },
          end: async () => {
            const tail = encoded ? await encoded.end() : Buffer.alloc(0);
            if (tail.length > 0) await sink.write(tail);
            await sink.end(characterCount(job.text));
          },
          broke: (reason, status, err) => sink.broke(reason, status, err),
        },
        { maxSeconds: limit, continuation },
      );
    } finally {
      // cut short (a break nobody continued, the cap, the client gone): the worker drops the encoder
      (encoded as EncodedAcrossSteps | null)?.release();
    }
  }
}
