import { Body, Controller, Get, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentKey } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import type { FailoverScope } from '../failover/failover-scope';
import { Proxied, ProxyScope } from '../failover/failover.interceptor';
import type { AuthenticatedKey } from '../keys/key-directory';
import { SpeechRequestDto } from './dto/speech-request.dto';
import { VoiceListDto } from './dto/voice.dto';
import { SYNC_TEXT_LIMIT, toSpeechJob } from './speech-job';
import { SpeechService } from './speech.service';
import { VoicesService } from './voices.service';

@ApiTags('speech')
@ApiBearerAuth('proxy-key')
@Controller('v1/audio')
export class SpeechController {
  constructor(
    private readonly speech: SpeechService,
    private readonly voices: VoicesService,
  ) {}

  /**
   * Synthesise speech with the key's chain (MiniMax T2A shape). The body is the audio in the requested
   * format (`audio/mpeg`, `audio/wav`, `audio/flac`, or `audio/L16;rate=…;channels=…` for pcm), streamed
   * as it is produced, with the x-svc-* failover headers; mp3 answers also carry `x-svc-audio-bitrate`.
   */
  @Post('speech')
  @HttpCode(200)
  @Proxied('speech')
  @ApiProduces('audio/mpeg', 'audio/wav', 'audio/flac', 'audio/L16')
  @ApiOkResponse({ description: 'Audio bytes in the requested format.', schema: { type: 'string', format: 'binary' } })
  @ApiErrors(400, 401, 413, 502, 503)
  async create(@ProxyScope() scope: FailoverScope, @Body() body: SpeechRequestDto, @Res() res: Response): Promise<void> {
    await this.speech.respond(scope, toSpeechJob(body, SYNC_TEXT_LIMIT), res);
  }

  /** Voices of the speech providers in the key's chain. */
  @Get('voices')
  @ApiErrors(401)
  async list(@CurrentKey() key: AuthenticatedKey): Promise<VoiceListDto> {
    return { object: 'list', data: await this.voices.list(key) };
  }
}
