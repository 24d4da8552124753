import { Body, Controller, Delete, Get, HttpCode, Param, Post, UploadedFile, UseInterceptors } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { RequestId } from '../common/http/request-id.decorator';
import { RequireMultipart } from '../common/http/require-multipart.interceptor';
import { UploadRoute } from '../common/http/upload-route';
import { SingleFileUpload } from '../common/http/single-file-upload.interceptor';
import type { AuthenticatedKey } from '../keys/key-directory';
import { CustomVoicesService, MAX_SAMPLE_BYTES, UploadedSample } from './custom-voices.service';
import { VoiceListDto } from './dto/voice.dto';
import { VoicesService } from './voices.service';
import {
  CreateVoiceDto,
  CreateVoiceForm,
  CustomVoiceDeletedDto,
  CustomVoiceDto,
  DesignVoiceDto,
} from './dto/custom-voice.dto';

const UPLOAD_LIMITS = { fileSize: MAX_SAMPLE_BYTES, fields: 10, fieldSize: 64 * 1024, parts: 12 };

/** `/v1/audio/voices`: the voices a key can use (built-in and custom together), and its custom voices. */
@ApiTags('voices')
@ApiBearerAuth('proxy-key')
@ApiErrors(401)
@Controller('v1/audio/voices')
export class CustomVoicesController {
  constructor(
    private readonly voices: CustomVoicesService,
    private readonly usable: VoicesService,
  ) {}

  /** The key's custom voices (newest first), then the built-in voices of the speech providers in its chain. */
  @Get()
  async list(@CurrentKey() key: AuthenticatedKey): Promise<VoiceListDto> {
    return { object: 'list', data: await this.usable.list(key) };
  }

  /**
   * Clone a voice from `audio_sample` with the `consent` of one of your consent recordings (the official SDK's
   * `audio.voices.create`), on the first provider of the key's chain that can clone. With `type: prompt`, design one instead.
   */
  @Post()
  @HttpCode(200)
  @UploadRoute()
  @UseInterceptors(RequireMultipart, SingleFileUpload('audio_sample', UPLOAD_LIMITS))
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: CreateVoiceForm })
  @ApiOkResponse({ type: CustomVoiceDto })
  @ApiErrors(400, 404, 413, 415, 502, 503)
  create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() form: CreateVoiceDto,
    @UploadedFile() sample: UploadedSample | undefined,
    @RequestId() requestId: string,
  ): Promise<CustomVoiceDto> {
    return this.voices.create(key, form, sample, requestId);
  }

  /** Design a voice from a description (MiniMax voice design); no consent is needed, as no real person's voice is copied. */
  @Post('design')
  @HttpCode(200)
  @ApiOkResponse({ type: CustomVoiceDto })
  @ApiErrors(400, 502, 503)
  design(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: DesignVoiceDto,
    @RequestId() requestId: string,
  ): Promise<CustomVoiceDto> {
    return this.voices.design(key, { name: body.name, prompt: body.prompt, previewText: body.preview_text }, requestId);
  }

  /** Retrieve a custom voice. */
  @Get(':voice_id')
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('voice_id') id: string): Promise<CustomVoiceDto> {
    return this.voices.get(key.id, id);
  }

  /** Delete a custom voice here and at its provider; its consent can then be deleted. */
  @Delete(':voice_id')
  @HttpCode(200)
  @ApiErrors(404)
  delete(
    @CurrentKey() key: AuthenticatedKey,
    @Param('voice_id') id: string,
    @RequestId() requestId: string,
  ): Promise<CustomVoiceDeletedDto> {
    return this.voices.delete(key.id, id, requestId);
  }
}
