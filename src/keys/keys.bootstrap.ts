import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { EnvironmentVariables } from '../config/env.schema';
import { GatewayConfig } from '../config/gateway-config';
import { KIND_TRAITS } from '../config/provider-kinds';
import { DatabaseEndpoint } from '../database/database-endpoint';
import type { ChainStepDto } from '../config/chain-step.dto';
import { hashSecret } from './key-directory';
import { KeysRepository } from './keys.repository';
import { KeysService } from './keys.service';

/** A chain over every configured provider: chat steps first, then speech steps, in file order. */
export function demoChain(gateway: GatewayConfig): ChainStepDto[] {
  return (['chat', 'speech'] as const).flatMap((capability) =>
    gateway.providers
      .filter((p) => p.capabilities.includes(capability))
      .map((p) => ({ provider: p.name, model: KIND_TRAITS[p.kind].defaultModels[capability] ?? capability })),
  );
}

/** Creates the YAML's bootstrap keys, and a demo key on a first embedded start. */
@Injectable()
export class KeysBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(KeysBootstrap.name);
  /** Secret of the demo key made by this start, to print once. */
  demoSecret: string | null = null;

  constructor(
    private readonly keys: KeysService,
    private readonly repository: KeysRepository,
    private readonly gateway: GatewayConfig,
    private readonly env: EnvironmentVariables,
    private readonly endpoint: DatabaseEndpoint,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const warning of this.gateway.warnings) this.logger.warn(warning);
    for (const key of this.gateway.bootstrapKeys) {
      if (await this.repository.findBySecretHash(hashSecret(key.secret))) continue;
      await this.keys.create(key.name, key.chain, key.secret);
      this.logger.log(`bootstrap key '${key.name}' created from the gateway configuration`);
    }
    await this.warnUnconfiguredSteps();
    const wantDemo = this.env.SVC_DEMO_KEY ?? this.endpoint.isEmbedded;
    if (wantDemo && (await this.repository.count()) === 0) {
      const chain = demoChain(this.gateway);
      // a chain needs a step: with no provider configured there is nothing a demo key could use
      if (chain.length === 0) {
        this.logger.warn('no demo key created: the gateway configuration declares no provider');
        return;
      }
      const created = await this.keys.create('demo', chain);
      this.demoSecret = created.secret;
    }
  }

  /** A stored key's step whose provider is no longer configured is skipped by every request: say so once at boot, by key and step. */
  private async warnUnconfiguredSteps(): Promise<void> {
    for (const key of await this.repository.findAll()) {
      key.chain.forEach((step, i) => {
        const why = this.gateway.whyNotConfigured(step.provider);
        if (why !== null) {
          this.logger.warn(
            `key '${key.name}' (${key.id}): step chain[${i}] (provider '${step.provider}', model '${step.model}') is skipped: its provider is not configured (${why})`,
          );
        }
      });
    }
  }
}
