import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, Res, StreamableFile } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentKey } from '../auth/auth.decorators';
import { Public } from '../common/http/route-access';
import { Proxied, ProxyCall } from '../failover/failover.interceptor';
import type { ProxiedCall } from '../failover/proxied-call';
import type { AuthenticatedKey } from '../keys/key-directory';
import { SYNC_TEXT_LIMIT, toSpeechJob } from '../speech/speech-job';
import { SpeechTasksService } from '../speech/tasks/speech-tasks.service';
import {
  FileRetrieveResponse,
  isTaskId,
  queried,
  submitted,
  T2aAsyncQueryResponse,
  T2aAsyncResponse,
  taskFile,
} from './async-tasks';
import { speechRequestOf, T2aAsyncRequestDto, T2aRequestDto } from './dto/t2a.dto';
import { FileQueryDto, TaskQueryDto } from './dto/voices.dto';
import { MINIMAX_OK } from './minimax-errors';
import { AUDIO_LINK_PATH, MiniMaxFilesService } from './minimax-files.service';
import { MiniMaxSpeechService, T2aAnswer } from './minimax-speech.service';

/** The gateway's own origin as the client reached it (links in answers point back at it). */
export const baseUrlOf = (req: Request): string => `${req.protocol}://${req.get('host') ?? 'localhost'}`;

const MINIMAX_ERRORS =
  'Errors are HTTP 200 with a non-zero `base_resp.status_code` (1004 auth, 1002 rate limit, 2013 invalid parameters, 1000 providers failed), as MiniMax answers.';

/** MiniMax's T2A routes (decisions §10): MiniMax's shapes over the gateway's speech, async tasks and failover. */
@ApiTags('minimax')
@ApiBearerAuth('proxy-key')
@Controller('v1')
export class MiniMaxSpeechController {
  constructor(
    private readonly speech: MiniMaxSpeechService,
    private readonly tasks: SpeechTasksService,
    private readonly files: MiniMaxFilesService,
  ) {}

  /**
   * MiniMax's T2A v2 through the key's chain: `{data:{audio:"<hex>"}, extra_info, trace_id, base_resp}`;
   * `stream: true` answers MiniMax's SSE; `output_format: "url"` puts a link in `data.audio` that downloads
   * the audio without a key for 24 h. With the x-svc-* failover headers.
   */
  @Post('t2a_v2')
  @HttpCode(200)
  @Proxied('speech')
  @ApiOkResponse({ description: `MiniMax's T2A answer (JSON, or SSE with \`stream: true\`). ${MINIMAX_ERRORS}` })
  async t2a(
    @ProxyCall() call: ProxiedCall,
    @Body() body: T2aRequestDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const job = toSpeechJob(speechRequestOf(body), SYNC_TEXT_LIMIT);
    const answer: T2aAnswer = body.stream
      ? { kind: 'sse', excludeAggregated: body.stream_options?.exclude_aggregated_audio === true }
      : body.output_format === 'url'
        ? { kind: 'url', baseUrl: baseUrlOf(req) }
        : { kind: 'hex' };
    await this.speech.t2a(call, job, answer, res);
  }

  /** MiniMax's async T2A: the gateway's async task (up to 200,000 characters); `task_id` and `file_id` are its `task_…` id. */
  @Post('t2a_async_v2')
  @HttpCode(200)
  @ApiOkResponse({ description: `\`{task_id, task_token, file_id, usage_characters, base_resp}\`. ${MINIMAX_ERRORS}` })
  async t2aAsync(@CurrentKey() key: AuthenticatedKey, @Body() body: T2aAsyncRequestDto): Promise<T2aAsyncResponse> {
    return submitted(await this.tasks.create(key, body));
  }

  /** MiniMax's task query: `Processing`, `Success`, `Failed` or `Expired`. */
  @Get('query/t2a_async_query_v2')
  @ApiOkResponse({
    description: `\`{task_id, status, file_id, voice_switches, base_resp}\` (\`voice_switches\`: the gateway's, as the task record lists them). ${MINIMAX_ERRORS}`,
  })
  async query(@CurrentKey() key: AuthenticatedKey, @Query() query: TaskQueryDto): Promise<T2aAsyncQueryResponse> {
    return queried(await this.tasks.get(key.id, query.task_id));
  }

  /** MiniMax's file retrieval: a completed task's audio (`download_url`, fetched with the same key), or an upload. */
  @Get('files/retrieve')
  @ApiOkResponse({
    description: `\`{file:{file_id, bytes, created_at, filename, purpose, download_url}, base_resp}\`. ${MINIMAX_ERRORS}`,
  })
  async retrieve(
    @CurrentKey() key: AuthenticatedKey,
    @Query() query: FileQueryDto,
    @Req() req: Request,
  ): Promise<FileRetrieveResponse> {
    if (isTaskId(query.file_id)) return taskFile(await this.tasks.get(key.id, query.file_id), baseUrlOf(req));
    return { file: await this.files.describe(key.id, query.file_id), base_resp: MINIMAX_OK };
  }
}

/** The links of `output_format: "url"`: whoever holds one downloads its audio, without a key, for 24 h. */
@ApiTags('minimax')
@Controller('v1')
export class MiniMaxAudioLinksController {
  constructor(private readonly files: MiniMaxFilesService) {}

  /** The audio behind a `t2a_v2` link (`output_format: "url"`): no key needed, 404 once the 24 h are over. */
  @Get(`${AUDIO_LINK_PATH.slice('v1/'.length)}/:token`)
  @Public()
  @ApiProduces('audio/mpeg', 'audio/wav', 'audio/flac', 'audio/L16', 'audio/ogg', 'audio/PCMU')
  @ApiOkResponse({ description: 'The audio file.', schema: { type: 'string', format: 'binary' } })
  async audio(@Param('token') token: string): Promise<StreamableFile> {
    const file = await this.files.download(token);
    return new StreamableFile(file.data, {
      type: file.contentType,
      length: file.data.length,
      disposition: `attachment; filename="${file.filename}"`,
    });
  }
}
