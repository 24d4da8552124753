import { ApiProperty } from '@nestjs/swagger';

/** OpenAI's model object, for a model the key's chain serves. */
export class ModelDto {
  /** The model id to send as `model`. */
  @ApiProperty({ example: 'gpt-5.4-mini' })
  id!: string;

  @ApiProperty({ enum: ['model'] })
  object!: 'model';

  /** Unix seconds; 0, as the gateway does not know when an upstream provider made the model. */
  @ApiProperty({ type: 'integer', example: 0 })
  created!: number;

  /** The provider of the model's entry step (the first step of the chain that names it). */
  @ApiProperty({ example: 'openai' })
  owned_by!: string;
}

export class ModelListDto {
  @ApiProperty({ enum: ['list'] })
  object!: 'list';

  @ApiProperty({ type: [ModelDto] })
  data!: ModelDto[];
}
