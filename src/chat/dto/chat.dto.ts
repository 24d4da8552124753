import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ChatMessageDto {
  /** `system`, `user`, `assistant` or `tool`. */
  @ApiProperty({ example: 'user' })
  role!: string;
  /** Text, or an array of content parts. */
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
    example: 'Say hello in five words.',
  })
  content!: unknown;
}

/** An OpenAI chat completions request; every other OpenAI field is passed through to the provider. */
export class ChatCompletionRequestDto {
  /** Selects the entry step of the key's chain (the first chat step with this model). */
  // the demo key's chat model on a fresh start (the offline echo provider)
  @ApiProperty({ example: 'echo-1' })
  model!: string;
  @ApiProperty({ type: [ChatMessageDto], example: [{ role: 'user', content: 'Say hello in five words.' }] })
  messages!: ChatMessageDto[];
  /** Server-sent events, OpenAI style (`data: {...}` chunks, then `data: [DONE]`). */
  @ApiPropertyOptional()
  stream?: boolean;
  /** Passed through as sent, like every sampling field: the provider checks it. */
  @ApiPropertyOptional()
  temperature?: number;
  /** Passed through as sent: the provider checks it (OpenAI wants a whole number). */
  @ApiPropertyOptional()
  max_tokens?: number;
}

export class ChatChoiceDto {
  @ApiProperty({ type: 'integer' })
  index!: number;
  message!: ChatMessageDto;
  finish_reason!: string | null;
}

export class ChatUsageDto {
  @ApiProperty({ type: 'integer' })
  prompt_tokens!: number;
  @ApiProperty({ type: 'integer' })
  completion_tokens!: number;
  @ApiProperty({ type: 'integer' })
  total_tokens!: number;
}

/** An OpenAI `chat.completion`, plus the provider that served it. */
export class ChatCompletionDto {
  id!: string;
  @ApiProperty({ type: 'string', enum: ['chat.completion'] })
  object!: 'chat.completion';
  @ApiProperty({ type: 'integer' })
  created!: number;
  model!: string;
  choices!: ChatChoiceDto[];
  usage?: ChatUsageDto;
  /** The provider that served the request (also in `x-svc-provider-used`). */
  provider!: string;
}
