import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiExtraModels,
  ApiOkResponse,
  ApiProduces,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { Proxied, ProxyCall } from '../failover/failover.interceptor';
import type { ProxiedCall } from '../failover/proxied-call';
import { OpenAiSpeechRequestDto, type SpeechBody, withOpenAiFieldNames } from './dto/openai-speech-request.dto';
import { SpeechRequestDto } from './dto/speech-request.dto';
import { SpeechBodyPipe } from './speech-body.pipe';
import { SYNC_TEXT_LIMIT, toSpeechJob } from './speech-job';
import { SpeechService } from './speech.service';

@ApiTags('speech')
@ApiBearerAuth('proxy-key')
@Controller('v1/audio')
export class SpeechController {
  constructor(private readonly speech: SpeechService) {}

  /**
   * Synthesise speech with the key's chain. The body is MiniMax's T2A shape (the documented default), or
   * OpenAI's (`model`, `input`, `voice`, `response_format`, `speed`, `instructions`: the official SDK's
   * `audio.speech.create` works unchanged). The answer is the audio in the requested format (`audio/mpeg`,
   * `audio/wav` (wav and µ-law pcmu_wav), `audio/flac`, `audio/L16;rate=…;channels=…` for pcm,
   * `audio/ogg;codecs=opus`, `audio/PCMU;rate=…;channels=…` for pcmu_raw, `audio/aac` from an OpenAI step),
   * streamed as it is produced, with
   * the x-svc-* failover headers; mp3 answers also carry `x-svc-audio-bitrate`. MiniMax's optional fields
   * (`voice_setting.emotion`, `language_boost`, `pronunciation_dict`, …) are accepted: a MiniMax step receives
   * them as sent, and `x-svc-ignored-fields` lists what the serving step (or this audio answer) did not use.
   * OpenAI's `stream_format: "sse"` answers `text/event-stream`: `speech.audio.delta` events (base64 audio),
   * then `speech.audio.done`.
   */
  @Post('speech')
  @HttpCode(200)
  @Proxied('speech')
  @ApiExtraModels(SpeechRequestDto, OpenAiSpeechRequestDto)
  @ApiBody({
    description: "MiniMax's T2A request (default), or OpenAI's speech request.",
    schema: { oneOf: [{ $ref: getSchemaPath(SpeechRequestDto) }, { $ref: getSchemaPath(OpenAiSpeechRequestDto) }] },
    examples: {
      minimax: {
        summary: 'MiniMax shape (default)',
        value: {
          model: 'speech-02-hd',
          text: 'Hello from the gateway.',
          voice_setting: { voice_id: 'en-us' },
          audio_setting: { format: 'mp3' },
        },
      },
      openai: {
        summary: 'OpenAI shape',
        value: { model: 'speech-02-hd', input: 'Hello from the gateway.', voice: 'en-us', response_format: 'mp3' },
      },
    },
  })
  @ApiProduces(
    'audio/mpeg',
    'audio/wav',
    'audio/flac',
    'audio/L16',
    'audio/ogg',
    'audio/PCMU',
    'audio/aac',
    'text/event-stream',
  )
  @ApiOkResponse({
    description: 'Audio bytes in the requested format (OpenAI `stream_format: "sse"`: its speech events).',
    schema: { type: 'string', format: 'binary' },
    headers: {
      'Content-Disposition': {
        description: 'Audio answers: `attachment; filename="speech-<x-svc-request-id>.<mp3|wav|flac|pcm>"`.',
        schema: { type: 'string' },
      },
      'x-svc-ignored-fields': {
        description:
          'Request fields the serving step (or this audio answer) did not use, comma-separated; absent when none.',
        schema: { type: 'string' },
      },
    },
  })
  @ApiErrors(400, 401, 413, 502, 503)
  async create(
    @ProxyCall() call: ProxiedCall,
    @Body(SpeechBodyPipe) body: SpeechBody,
    @Res() res: Response,
  ): Promise<void> {
    try {
      const job = toSpeechJob(body.request, SYNC_TEXT_LIMIT);
      await this.speech.respond(
        call,
        body.instructions ? { ...job, instructions: body.instructions } : job,
        res,
        body.streamFormat === 'sse' ? 'openai-sse' : 'audio',
      );
    } catch (err) {
      throw body.shape === 'openai' ? withOpenAiFieldNames(err) : err;
    }
  }
}
