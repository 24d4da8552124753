import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class VoiceDto {
  /** The id to send as `voice_setting.voice_id`. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['audio.voice'] })
  object!: 'audio.voice';
  name!: string;
  /** The provider that speaks with this voice. */
  provider!: string;
  /** Languages of a built-in voice (empty for custom voices). */
  languages!: string[];
  /** `builtin`; custom voices: `audio_sample` (cloned) or `prompt` (designed). */
  @ApiProperty({ enum: ['builtin', 'audio_sample', 'prompt'] })
  type!: 'builtin' | 'audio_sample' | 'prompt';
  /** Custom voices: the consent behind a cloned voice (null for a designed one). */
  @ApiPropertyOptional({ type: String, nullable: true })
  consent_id?: string | null;
  /** Custom voices: Unix time in seconds. */
  @ApiPropertyOptional({ type: 'integer' })
  created_at?: number;
  /** Designed voices: the description. */
  prompt?: string;
}

export class VoiceListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: VoiceDto[];
}
