import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength, MinLength } from 'class-validator';

export class CreateVoiceConsentDto {
  /** BCP 47 language tag of the recorded phrase (stored canonicalised, e.g. `en-us` → `en-US`). */
  @IsString()
  @MinLength(2)
  @MaxLength(64)
  language!: string;

  /** Label of the recording, 1 to 256 characters. */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;
}

/** The multipart form of a consent upload (for the OpenAPI document). */
export class CreateVoiceConsentForm extends CreateVoiceConsentDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description: 'Audio of the consent phrase (wav, mp3, ogg, flac, webm, mp4/m4a or aac; at most 10 MiB).',
  })
  recording!: unknown;
}

export class RenameVoiceConsentDto {
  /** New label, 1 to 256 characters. Only the name can be changed. */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;
}

export class VoiceConsentDto {
  /** Identifier, `vc_…`. */
  id!: string;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
  /** BCP 47 language tag. */
  language!: string;
  /** Label of the recording. */
  name!: string;
  @ApiProperty({ type: 'string', enum: ['audio.voice_consent'] })
  object!: 'audio.voice_consent';
}

export class VoiceConsentDeletedDto {
  id!: string;
  deleted!: boolean;
  @ApiProperty({ type: 'string', enum: ['audio.voice_consent'] })
  object!: 'audio.voice_consent';
}

export class VoiceConsentListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: VoiceConsentDto[];
  /** Whether more objects follow. */
  has_more!: boolean;
  /** Id of the first item of the page. */
  first_id!: string | null;
  /** Id of the last item of the page: the `after` cursor of the next page. */
  last_id!: string | null;
}
