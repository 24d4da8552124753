import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/http/route-access';
import { ApiErrors } from '../common/http/api-errors.decorator';
import {
  CreatedProxyKeyDto,
  CreateProxyKeyDto,
  DeletedProxyKeyDto,
  ProxyKeyDto,
  ProxyKeyListDto,
  UpdateProxyKeyDto,
} from './dto/proxy-key.dto';
import { KeysService } from './keys.service';

/** Operators manage proxy keys (tenants) with the admin token. */
@ApiTags('admin')
@ApiBearerAuth('admin')
@AdminOnly()
@ApiErrors(401, 403)
@Controller('v1/admin/keys')
export class KeysController {
  constructor(private readonly keys: KeysService) {}

  /** Create a proxy key; its secret is shown only in this response. */
  @Post()
  @ApiErrors(400)
  create(@Body() body: CreateProxyKeyDto): Promise<CreatedProxyKeyDto> {
    return this.keys.create(body.name, body.chain);
  }

  /** List proxy keys (secrets are never shown). */
  @Get()
  async list(): Promise<ProxyKeyListDto> {
    return { object: 'list', data: await this.keys.list() };
  }

  /** Retrieve a proxy key. */
  @Get(':key_id')
  @ApiErrors(404)
  get(@Param('key_id') id: string): Promise<ProxyKeyDto> {
    return this.keys.get(id);
  }

  /** Rename a key or replace its chain. */
  @Patch(':key_id')
  @ApiErrors(400, 404)
  update(@Param('key_id') id: string, @Body() body: UpdateProxyKeyDto): Promise<ProxyKeyDto> {
    return this.keys.update(id, body);
  }

  /** Delete a key: it stops authenticating at once, and its consents are deleted. */
  @Delete(':key_id')
  @HttpCode(200)
  @ApiErrors(404)
  delete(@Param('key_id') id: string): Promise<DeletedProxyKeyDto> {
    return this.keys.delete(id);
  }
}
