import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { DomainError } from '../common/errors/domain-error';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { GatewayConfig } from '../config/gateway-config';
import type { AuthenticatedKey } from '../keys/key-directory';
import { ModelDto, ModelListDto } from './dto/model.dto';
import { servedModels } from './models';

const toDto = (model: { id: string; ownedBy: string }): ModelDto => ({
  id: model.id,
  object: 'model',
  created: 0,
  owned_by: model.ownedBy,
});

@ApiTags('models')
@ApiBearerAuth('proxy-key')
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly gateway: GatewayConfig) {}

  /** The models the bearer key's chain serves (OpenAI's `client.models.list()`), in chain order. */
  @Get()
  @ApiErrors(401)
  list(@CurrentKey() key: AuthenticatedKey): ModelListDto {
    return { object: 'list', data: servedModels(key.chain, this.gateway).map(toDto) };
  }

  /** One model of the key's chain (`client.models.retrieve(id)`); 404 model_not_found for any other. */
  @Get(':model_id')
  @ApiErrors(401, 404)
  retrieve(@CurrentKey() key: AuthenticatedKey, @Param('model_id') id: string): ModelDto {
    const model = servedModels(key.chain, this.gateway).find((m) => m.id === id);
    if (!model)
      throw new DomainError(
        'model_not_found',
        `The model '${id}' is not served by this key's chain; GET /v1/models lists the models it serves.`,
        { param: 'model' },
      );
    return toDto(model);
  }
}
