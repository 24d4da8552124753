import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { ChainStepDto } from '../config/chain-step.dto';
import { ProxyKeyEntity } from './proxy-key.entity';

export interface KeysSignature {
  count: number;
  lastChange: string | null;
}

@Injectable()
export class KeysRepository {
  constructor(@InjectRepository(ProxyKeyEntity) private readonly keys: Repository<ProxyKeyEntity>) {}

  findAll(): Promise<ProxyKeyEntity[]> {
    return this.keys.find({ order: { createdAt: 'ASC', id: 'ASC' } });
  }

  findById(id: string): Promise<ProxyKeyEntity | null> {
    return this.keys.findOneBy({ id });
  }

  findBySecretHash(secretHash: string): Promise<ProxyKeyEntity | null> {
    return this.keys.findOneBy({ secretHash });
  }

  findByName(name: string): Promise<ProxyKeyEntity | null> {
    return this.keys.findOneBy({ name });
  }

  count(): Promise<number> {
    return this.keys.count();
  }

  insert(key: Pick<ProxyKeyEntity, 'id' | 'name' | 'secretHash' | 'secretHint' | 'chain'>): Promise<ProxyKeyEntity> {
    return this.keys.save(this.keys.create(key));
  }

  async update(id: string, patch: { name?: string; chain?: ChainStepDto[] }): Promise<ProxyKeyEntity | null> {
    const result = await this.keys.update({ id }, patch);
    return result.affected ? this.findById(id) : null;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.keys.delete({ id });
    return (result.affected ?? 0) > 0;
  }

  /** Changes whenever a key is created, changed or deleted: what replicas poll to refresh their cache. */
  async signature(): Promise<KeysSignature> {
    const rows: Array<{ count: string; last_change: Date | null }> = await this.keys.query(
      'SELECT count(*) AS count, max(updated_at) AS last_change FROM proxy_keys',
    );
    return { count: Number(rows[0].count), lastChange: rows[0].last_change?.toISOString() ?? null };
  }
}
