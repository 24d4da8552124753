import { Body, Controller, Get, HttpCode, Param, Post, Req, Res, StreamableFile } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Readable } from 'node:stream';
import { CurrentKey } from '../../auth/auth.decorators';
import { ApiErrors } from '../../common/http/api-errors.decorator';
import { audioAttachment } from '../../common/http/attachment';
import { requestIdOf } from '../../common/http/request-id';
import { ignoredFieldsHeader, IGNORED_FIELDS_HEADER } from '../../providers/speech-fields';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { AsyncSpeechRequestDto } from '../dto/speech-request.dto';
import { SpeechTaskDto } from './dto/speech-task.dto';
import { SpeechTasksService } from './speech-tasks.service';
import { tracing } from '../../tracing/tracing';

const TASKS_PATH = 'v1/audio/speech/async';

@ApiTags('speech')
@ApiBearerAuth('proxy-key')
@ApiErrors(401)
@Controller(TASKS_PATH)
export class SpeechTasksController {
  constructor(private readonly tasks: SpeechTasksService) {}

  /**
   * Start speech for a long text (up to 200,000 characters; the body of synchronous speech, with
   * `voice_setting` optional: the entry step's default voice without it). The model and voice are
   * checked now; the audio is made in the background. Poll the `Location`. MiniMax's optional fields are
   * accepted as on synchronous speech; `x-svc-ignored-fields` lists those the entry step will not use, and
   * `stream`, `stream_options`, `output_format` and subtitles (the task's file is the audio).
   */
  @Post()
  @HttpCode(202)
  @ApiAcceptedResponse({
    type: SpeechTaskDto,
    headers: {
      Location: { description: 'Path of the task: /v1/audio/speech/async/{id}', schema: { type: 'string' } },
      'x-svc-ignored-fields': {
        description: 'Request fields that will not be used, comma-separated; absent when none.',
        schema: { type: 'string' },
      },
    },
  })
  @ApiErrors(400, 413, 429, 507)
  async create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: AsyncSpeechRequestDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SpeechTaskDto> {
    // tracing hook: the POST's own SERVER span (or, unsampled, the client's traceparent) is stored with the task,
    // for its chunks' span links (decisions §12)
    const traceparent = tracing.on
      ? (tracing.httpRequest(req, res, requestIdOf(req), key.id).traceparent ?? tracing.incomingTraceparent(req))
      : null;
    const { task, ignored } = await this.tasks.submit(key, body, traceparent);
    res.setHeader('Location', `/${TASKS_PATH}/${task.id}`);
    const header = ignoredFieldsHeader(ignored);
    if (header) res.setHeader(IGNORED_FIELDS_HEADER, header);
    return task;
  }

  /** Status and progress of a task. */
  @Get(':task_id')
  @ApiOkResponse({ type: SpeechTaskDto })
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('task_id') id: string): Promise<SpeechTaskDto> {
    return this.tasks.get(key.id, id);
  }

  /** The audio of a completed task, in the requested format (409 before, 410 after the retention). */
  @Get(':task_id/download')
  @ApiProduces('audio/mpeg', 'audio/wav', 'audio/flac', 'audio/L16', 'audio/ogg', 'audio/PCMU')
  @ApiOkResponse({
    description: 'The audio file.',
    schema: { type: 'string', format: 'binary' },
    headers: {
      'Content-Disposition': {
        description: '`attachment; filename="speech-<task id>.<mp3|wav|flac|pcm>"`.',
        schema: { type: 'string' },
      },
    },
  })
  @ApiErrors(404, 409, 410)
  async download(@CurrentKey() key: AuthenticatedKey, @Param('task_id') id: string): Promise<StreamableFile> {
    const file = await this.tasks.download(key.id, id);
    // a part that cannot be read later cuts the connection (StreamableFile's default): a short body, never a wrong one
    return new StreamableFile(Readable.from(file.parts), {
      type: file.contentType,
      length: file.length,
      disposition: audioAttachment(`speech-${id}`, file.contentType),
    });
  }
}
