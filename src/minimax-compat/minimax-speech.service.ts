import { Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { DomainError } from '../common/errors/domain-error';
import { sendJson } from '../common/http/send-json';
import { EnvironmentVariables } from '../config/env.schema';
import type { ProxiedCall } from '../failover/proxied-call';
import type { AudioStream } from '../providers/provider-adapter';
import { ignoredFieldsHeader, IGNORED_FIELDS_HEADER, type SpeechField } from '../providers/speech-fields';
import type { SpeechJob } from '../speech/speech-job';
import { routeIgnoredFields, SpeechService } from '../speech/speech.service';
import { withFlacLength } from '../audio/flac-length';
import { extraInfo } from './extra-info';
import { MINIMAX_CODES } from '../common/errors/minimax-codes';
import { MINIMAX_OK, TRACE_HEADER } from './minimax-errors';
import { MiniMaxFilesService } from './minimax-files.service';

/** How `POST /v1/t2a_v2` answers: hex in JSON, a link in JSON, or MiniMax's SSE. */
export type T2aAnswer =
  | { kind: 'hex' }
  | { kind: 'url'; baseUrl: string }
  | { kind: 'sse'; excludeAggregated: boolean };

const brokeMessage = (call: ProxiedCall, reason: string): string =>
  `${call.scope.served?.provider ?? 'the provider'} failed after the audio began: ${reason}`;

/** `x-svc-ignored-fields`, as `/v1/audio/speech` sends it: what the serving step and this route did not use. */
function putIgnoredFields(res: Response, job: SpeechJob, ignored: SpeechField[]): void {
  const header = ignoredFieldsHeader([...ignored, ...routeIgnoredFields(job, true)]);
  if (header) res.setHeader(IGNORED_FIELDS_HEADER, header);
}

/** MiniMax's T2A answers around the one speech pipeline (SpeechService.deliver): only the wire format is this module's. */
@Injectable()
export class MiniMaxSpeechService {
  constructor(
    private readonly speech: SpeechService,
    private readonly files: MiniMaxFilesService,
    private readonly env: EnvironmentVariables,
  ) {}

  async t2a(call: ProxiedCall, job: SpeechJob, answer: T2aAnswer, res: Response): Promise<void> {
    if (answer.kind === 'sse') return this.sse(call, job, answer.excludeAggregated, res);
    // a link that could not be stored is refused before any provider is called
    if (answer.kind === 'url') await this.files.assertLinkRoom(call.key.id);
    const { audio, bytes, ignored } = await this.collect(call, job);
    putIgnoredFields(res, job, ignored);
    const data =
      answer.kind === 'url'
        ? await this.files.link(call.key.id, bytes, audio.contentType, job.output.format, answer.baseUrl)
        : bytes.toString('hex');
    res.setHeader(TRACE_HEADER, call.requestId);
    sendJson(res, 200, {
      data: { audio: data, status: 2, ced: '' },
      extra_info: extraInfo(job, bytes, audio.bitrate ?? job.output.bitrate),
      trace_id: call.requestId,
      base_resp: MINIMAX_OK,
    });
  }

  /** The whole clip through the pipeline (for JSON answers, and a designed voice's trial audio). */
  async collect(
    call: ProxiedCall,
    job: SpeechJob,
  ): Promise<{ audio: AudioStream; bytes: Buffer; ignored: SpeechField[] }> {
    const parts: Buffer[] = [];
    // set by the pipeline's callbacks
    const state: { audio: AudioStream | null; ignored: SpeechField[]; broke: DomainError | null } = {
      audio: null,
      ignored: [],
      broke: null,
    };
    await this.speech.deliver(call, job, {
      open: (audio, ignored) => {
        state.audio = audio;
        state.ignored = ignored;
      },
      write: (bytes) => {
        parts.push(bytes);
        return Promise.resolve();
      },
      end: () => undefined,
      broke: (reason, status) => {
        state.broke = new DomainError(
          status === 413 ? 'audio_too_long' : 'all_providers_failed',
          brokeMessage(call, reason),
        );
      },
    });
    if (state.broke) throw state.broke;
    if (!state.audio || call.aborted)
      throw new DomainError('internal_error', 'The client left before the audio was made.');
    const bytes = Buffer.concat(parts);
    // the clip went through the live pipeline; a whole answer's FLAC header says its length (issue 41)
    return {
      audio: state.audio,
      bytes: job.output.format === 'flac' ? withFlacLength(bytes) : bytes,
      ignored: state.ignored,
    };
  }

  /** MiniMax's SSE: `data: {"data":{"audio":"<hex>","status":1},…}` per chunk, then `status: 2` with `extra_info`. */
  private async sse(call: ProxiedCall, job: SpeechJob, excludeAggregated: boolean, res: Response): Promise<void> {
    const parts: Buffer[] = [];
    let bitrate = job.output.bitrate;
    const event = (body: unknown): string => `data: ${JSON.stringify(body)}\n\n`;
    await this.speech.deliver(call, job, {
      open: (audio, ignored) => {
        bitrate = audio.bitrate ?? bitrate;
        res.status(200);
        putIgnoredFields(res, job, ignored);
        res.setHeader('Content-Type', 'text/event-stream');
        res.setHeader('Cache-Control', 'no-cache');
        res.setHeader(TRACE_HEADER, call.requestId);
        res.flushHeaders();
      },
      write: async (bytes) => {
        parts.push(bytes);
        const more = res.write(
          event({
            data: { audio: bytes.toString('hex'), status: 1, ced: '' },
            trace_id: call.requestId,
            base_resp: MINIMAX_OK,
          }),
        );
        // a client that stops reading is dropped after the stall limit (decisions §11)
        if (!more) await call.drained(this.env.SVC_HTTP_STALL_MS);
      },
      end: () => {
        const whole = Buffer.concat(parts);
        res.end(
          event({
            data: { audio: excludeAggregated ? '' : whole.toString('hex'), status: 2, ced: '' },
            extra_info: extraInfo(job, whole, bitrate),
            trace_id: call.requestId,
            base_resp: MINIMAX_OK,
          }),
        );
      },
      // as MiniMax ends a stream that fails: an event with a non-zero base_resp, and no final audio event
      broke: (reason, status) => {
        const code = status === 413 ? MINIMAX_CODES.invalidParams : MINIMAX_CODES.unknown;
        res.end(
          event({
            trace_id: call.requestId,
            base_resp: { status_code: code, status_msg: brokeMessage(call, reason) },
          }),
        );
      },
    });
  }
}
