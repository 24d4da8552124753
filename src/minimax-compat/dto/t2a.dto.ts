import { ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsDefined, IsIn, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { AsyncSpeechRequestDto, SpeechRequestDto, VoiceSettingDto } from '../../speech/dto/speech-request.dto';

export const MINIMAX_EMOTIONS = ['happy', 'sad', 'angry', 'fearful', 'disgusted', 'surprised', 'calm', 'fluent', 'whisper', 'neutral'] as const;

/**
 * `voice_setting` as MiniMax's clients send it. `emotion` is here only until the speech DTO takes MiniMax's
 * optional fields itself (issue 17 part 2): the official clients always send it.
 */
export class MiniMaxVoiceSettingDto extends VoiceSettingDto {
  @ApiPropertyOptional({ enum: MINIMAX_EMOTIONS })
  @IsOptional() @IsIn(MINIMAX_EMOTIONS)
  emotion?: (typeof MINIMAX_EMOTIONS)[number];
}

export class StreamOptionsDto {
  /** Leave the whole clip out of the final event (it then carries only `extra_info`). */
  @IsOptional() @IsBoolean()
  exclude_aggregated_audio?: boolean;
}

/** MiniMax's T2A v2 request (`POST /v1/t2a_v2`): the speech request, and how this surface answers it. */
export class T2aRequestDto extends OmitType(SpeechRequestDto, ['voice_setting'] as const) {
  @IsDefined() @ValidateNested() @Type(() => MiniMaxVoiceSettingDto)
  voice_setting!: MiniMaxVoiceSettingDto;

  /** MiniMax's SSE: audio events as the audio is made, then a final event with `extra_info`. */
  @ApiPropertyOptional({ default: false })
  @IsOptional() @IsBoolean()
  stream?: boolean;

  @IsOptional() @ValidateNested() @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  /** `hex` (default): the audio in `data.audio`; `url`: a link that downloads it without a key for 24 h. */
  @ApiPropertyOptional({ enum: ['hex', 'url'], default: 'hex' })
  @IsOptional() @IsIn(['hex', 'url'])
  output_format?: 'hex' | 'url';

  /** Until the speech DTO takes MiniMax's optional fields (issue 17 part 2): the official clients always send it. */
  @IsOptional() @IsString() @MaxLength(64)
  language_boost?: string;
}

/** MiniMax's async T2A request (`POST /v1/t2a_async_v2`). */
export class T2aAsyncRequestDto extends OmitType(AsyncSpeechRequestDto, ['voice_setting'] as const) {
  @IsOptional() @ValidateNested() @Type(() => MiniMaxVoiceSettingDto)
  voice_setting?: MiniMaxVoiceSettingDto;

  /** As on `t2a_v2`, until the speech DTO takes MiniMax's optional fields. */
  @IsOptional() @IsString() @MaxLength(64)
  language_boost?: string;
}

/**
 * The speech request inside a MiniMax one: this surface's own fields (how the answer is shaped) removed, the
 * rest as sent, for the speech services to read what they take (MiniMax's optional fields included).
 */
export function speechRequestOf(dto: T2aRequestDto): SpeechRequestDto {
  const { stream: _stream, stream_options: _options, output_format: _format, ...request } = dto;
  return request;
}
