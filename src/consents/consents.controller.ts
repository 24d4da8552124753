import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  StreamableFile,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiConsumes, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { audioAttachment } from '../common/http/attachment';
import { DEFAULT_PAGE_SIZE, ListQueryDto } from '../common/http/pagination.dto';
import { RequireMultipart } from '../common/http/require-multipart.interceptor';
import { UploadRoute } from '../common/http/upload-route';
import { SingleFileUpload } from '../common/http/single-file-upload.interceptor';
import type { AuthenticatedKey } from '../keys/key-directory';
import { ConsentsService, MAX_RECORDING_BYTES, UploadedRecording } from './consents.service';
import {
  CreateVoiceConsentDto,
  CreateVoiceConsentForm,
  RenameVoiceConsentDto,
  VoiceConsentDeletedDto,
  VoiceConsentDto,
  VoiceConsentListDto,
} from './dto/voice-consent.dto';

const UPLOAD_LIMITS = { fileSize: MAX_RECORDING_BYTES, fields: 8, fieldSize: 64 * 1024, parts: 10 };

@ApiTags('voice consents')
@ApiBearerAuth('proxy-key')
@ApiErrors(401)
@Controller('v1/audio/voice_consents')
export class ConsentsController {
  constructor(private readonly consents: ConsentsService) {}

  /** Upload a recorded consent phrase. */
  @Post()
  @HttpCode(200)
  @UploadRoute()
  @UseInterceptors(RequireMultipart, SingleFileUpload('recording', UPLOAD_LIMITS))
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: CreateVoiceConsentForm })
  @ApiOkResponse({ type: VoiceConsentDto })
  @ApiErrors(400, 413, 415, 429, 507)
  create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() form: CreateVoiceConsentDto,
    @UploadedFile() recording: UploadedRecording | undefined,
  ): Promise<VoiceConsentDto> {
    return this.consents.create(key.id, form, recording);
  }

  /** List consents, newest first, with cursor pagination. */
  @Get()
  @ApiErrors(400)
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: ListQueryDto): Promise<VoiceConsentListDto> {
    return this.consents.list(key.id, query.after, query.limit ?? DEFAULT_PAGE_SIZE);
  }

  /** Retrieve a consent. */
  @Get(':consent_id')
  @ApiErrors(404)
  get(@CurrentKey() key: AuthenticatedKey, @Param('consent_id') id: string): Promise<VoiceConsentDto> {
    return this.consents.get(key.id, id);
  }

  /** Rename a consent (only the name can change). */
  @Post(':consent_id')
  @HttpCode(200)
  @ApiErrors(400, 404)
  rename(
    @CurrentKey() key: AuthenticatedKey,
    @Param('consent_id') id: string,
    @Body() body: RenameVoiceConsentDto,
  ): Promise<VoiceConsentDto> {
    return this.consents.rename(key.id, id, body.name);
  }

  /** Delete a consent and its recording (409 `consent_in_use` while a custom voice depends on it). */
  @Delete(':consent_id')
  @HttpCode(200)
  @ApiErrors(404, 409)
  delete(@CurrentKey() key: AuthenticatedKey, @Param('consent_id') id: string): Promise<VoiceConsentDeletedDto> {
    return this.consents.delete(key.id, id);
  }

  /** Download the stored recording, with its content type. */
  @Get(':consent_id/content')
  @ApiProduces('audio/*')
  @ApiOkResponse({ description: 'The recording bytes.', schema: { type: 'string', format: 'binary' } })
  @ApiErrors(404)
  async content(@CurrentKey() key: AuthenticatedKey, @Param('consent_id') id: string): Promise<StreamableFile> {
    const recording = await this.consents.recording(key.id, id);
    return new StreamableFile(recording.data, {
      type: recording.type,
      length: recording.data.length,
      disposition: audioAttachment(id, recording.type),
    });
  }
}
