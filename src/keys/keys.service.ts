import { Injectable } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway-config';
import { DomainError, notFound } from '../common/errors/domain-error';
import { newId, randomBase62 } from '../common/ids';
import { CHAIN_NOT_EMPTY, type ChainStepDto } from '../config/chain-step.dto';
import { conductOf } from '../config/conduct.dto';
import { CreatedProxyKeyDto, DeletedProxyKeyDto, ProxyKeyDto, UpdateProxyKeyDto } from './dto/proxy-key.dto';
import { hashSecret, KeyDirectory } from './key-directory';
import { KeysRepository } from './keys.repository';
import { ProxyKeyEntity } from './proxy-key.entity';

export const newKeySecret = (): string => `sk-svc-${randomBase62(40)}`;

const toSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

function toDto(row: ProxyKeyEntity): ProxyKeyDto {
  return {
    id: row.id,
    object: 'proxy_key',
    name: row.name,
    chain: row.chain,
    secret_hint: row.secretHint,
    created_at: toSeconds(row.createdAt),
    updated_at: toSeconds(row.updatedAt),
  };
}

/** Proxy keys (tenants): what the admin API and the CLI manage. */
@Injectable()
export class KeysService {
  constructor(
    private readonly repository: KeysRepository,
    private readonly directory: KeyDirectory,
    private readonly gateway: GatewayConfig,
  ) {}

  async create(name: string, chain: ChainStepDto[], secret = newKeySecret()): Promise<CreatedProxyKeyDto> {
    this.assertChain(chain);
    const row = await this.repository.insert({
      id: newId('pk'),
      name,
      secretHash: hashSecret(secret),
      secretHint: secret.slice(-4),
      chain: chain.map(normaliseStep),
    });
    await this.directory.changed();
    return { ...toDto(row), secret };
  }

  async list(): Promise<ProxyKeyDto[]> {
    return (await this.repository.findAll()).map(toDto);
  }

  async get(id: string): Promise<ProxyKeyDto> {
    const row = await this.repository.findById(id);
    if (!row) throw notFound('proxy key', id, 'key_id');
    return toDto(row);
  }

  async update(id: string, patch: UpdateProxyKeyDto): Promise<ProxyKeyDto> {
    if (patch.chain) this.assertChain(patch.chain);
    const row = await this.repository.update(id, { name: patch.name, chain: patch.chain?.map(normaliseStep) });
    if (!row) throw notFound('proxy key', id, 'key_id');
    await this.directory.changed();
    return toDto(row);
  }

  async delete(id: string): Promise<DeletedProxyKeyDto> {
    if (!(await this.repository.delete(id))) throw notFound('proxy key', id, 'key_id');
    await this.directory.changed();
    return { id, object: 'proxy_key', deleted: true };
  }

  /** A chain has at least one step (the DTOs say so too; the bootstrap keys come here without them), each naming a configured provider. */
  private assertChain(chain: ChainStepDto[]): void {
    if (chain.length === 0)
      throw new DomainError('invalid_value', `Invalid value for 'chain': ${CHAIN_NOT_EMPTY}.`, { param: 'chain' });
    chain.forEach((step, i) => {
      if (!this.gateway.provider(step.provider)) {
        const known = this.gateway.providers.map((p) => p.name).join(', ') || 'none';
        throw new DomainError('unknown_provider', `Unknown provider '${step.provider}' (configured: ${known}).`, {
          param: `chain[${i}].provider`,
        });
      }
    });
  }
}

/** Stored steps carry only the fields a step has (class instances → plain JSON). */
function normaliseStep(step: ChainStepDto): ChainStepDto {
  const out: ChainStepDto = { provider: step.provider, model: step.model, ...conductOf(step) };
  if (step.usage_cap !== undefined) out.usage_cap = { requests: step.usage_cap.requests, per: step.usage_cap.per };
  if (step.voice_map !== undefined) out.voice_map = { ...step.voice_map };
  if (step.continuation !== undefined) out.continuation = [...step.continuation];
  return out;
}
