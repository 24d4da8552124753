import { Body, Controller, HttpCode, Post, UploadedFile, UseInterceptors } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { RequireMultipart } from '../common/http/require-multipart.interceptor';
import { RequestId } from '../common/http/request-id.decorator';
import { SingleFileUpload } from '../common/http/single-file-upload.interceptor';
import { UploadRoute } from '../common/http/upload-route';
import { Proxied, ProxyCall } from '../failover/failover.interceptor';
import type { ProxiedCall } from '../failover/proxied-call';
import type { AuthenticatedKey } from '../keys/key-directory';
import { MAX_SAMPLE_BYTES } from '../voices/custom-voices.service';
import {
  FileUploadDto,
  FileUploadForm,
  GetVoiceRequestDto,
  VoiceCloneRequestDto,
  VoiceDesignRequestDto,
} from './dto/voices.dto';
import { MINIMAX_OK } from './minimax-errors';
import { MiniMaxFileDto, MiniMaxFilesService } from './minimax-files.service';
import {
  GetVoiceResponse,
  MiniMaxVoicesService,
  VoiceCloneResponse,
  VoiceDesignResponse,
} from './minimax-voices.service';

const UPLOAD_LIMITS = { fileSize: MAX_SAMPLE_BYTES, fields: 4, fieldSize: 1024, parts: 6 };
const MINIMAX_ERRORS = 'Errors are HTTP 200 with a non-zero `base_resp.status_code`, as MiniMax answers.';

interface UploadedPart {
  buffer: Buffer;
  originalname?: string;
  mimetype?: string;
}

/** MiniMax's voice routes (decisions §10): listing, uploads and cloning behind the consent gate, design. */
@ApiTags('minimax')
@ApiBearerAuth('proxy-key')
@Controller('v1')
export class MiniMaxVoicesController {
  constructor(
    private readonly voices: MiniMaxVoicesService,
    private readonly files: MiniMaxFilesService,
  ) {}

  /** The key's voices as MiniMax lists them: `system_voice`, `voice_cloning`, `voice_generation`. */
  @Post('get_voice')
  @HttpCode(200)
  @ApiOkResponse({ description: `\`{system_voice, voice_cloning, voice_generation, base_resp}\`. ${MINIMAX_ERRORS}` })
  list(@CurrentKey() key: AuthenticatedKey, @Body() body: GetVoiceRequestDto): Promise<GetVoiceResponse> {
    return this.voices.list(key, body);
  }

  /** A file for `voice_clone` (`purpose: voice_clone`); kept 24 h. */
  @Post('files/upload')
  @HttpCode(200)
  @UploadRoute()
  @UseInterceptors(RequireMultipart, SingleFileUpload('file', UPLOAD_LIMITS))
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: FileUploadForm })
  @ApiOkResponse({
    description: `\`{file:{file_id, bytes, created_at, filename, purpose}, base_resp}\`. ${MINIMAX_ERRORS}`,
  })
  async upload(
    @CurrentKey() key: AuthenticatedKey,
    @Body() form: FileUploadDto,
    @UploadedFile() file: UploadedPart | undefined,
  ): Promise<{ file: MiniMaxFileDto; base_resp: typeof MINIMAX_OK }> {
    return { file: await this.files.upload(key.id, form.purpose, file), base_resp: MINIMAX_OK };
  }

  /**
   * Clone a voice from an uploaded file. Gateway extension: `consent_id`, a consent recording of this key, is
   * required; without it the clone is refused (2013) and nothing reaches the provider.
   */
  @Post('voice_clone')
  @HttpCode(200)
  @ApiOkResponse({
    description: `\`{input_sensitive, input_sensitive_type, demo_audio, voice_id, base_resp}\`; \`voice_id\` is the gateway's id to speak with. ${MINIMAX_ERRORS}`,
  })
  clone(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: VoiceCloneRequestDto,
    @RequestId() requestId: string,
  ): Promise<VoiceCloneResponse> {
    return this.voices.clone(key, body, requestId);
  }

  /** Design a voice from a description; `trial_audio` is `preview_text` spoken with it (hex mp3), through the key's chain. */
  @Post('voice_design')
  @HttpCode(200)
  @Proxied('speech')
  @ApiOkResponse({ description: `\`{voice_id, trial_audio, base_resp}\`. ${MINIMAX_ERRORS}` })
  design(@ProxyCall() call: ProxiedCall, @Body() body: VoiceDesignRequestDto): Promise<VoiceDesignResponse> {
    return this.voices.design(call, body);
  }
}
