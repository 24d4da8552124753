import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SEALED_PREFIX, SecretBox } from './secret-box';
import { WebhooksRepository } from './webhooks.repository';

const BATCH = 500;

/**
 * At start with a key: endpoint secrets stored in plaintext (before a key was set) are sealed in
 * place. Each row is swapped only if unchanged, so replicas starting together, or a second start,
 * do it once and harmlessly.
 */
@Injectable()
export class SecretSealing implements OnApplicationBootstrap {
  private readonly logger = new Logger(SecretSealing.name);

  constructor(
    private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.box.encrypts) return;
    let sealed = 0;
    for (;;) {
      const rows = await this.repository.unsealedSecrets(SEALED_PREFIX, BATCH);
      for (const row of rows)
        if (await this.repository.swapSecret(row.id, row.secret, this.box.seal(row.secret, row.id))) sealed += 1;
      if (rows.length < BATCH) break;
    }
    if (sealed > 0)
      this.logger.log(`sealed ${sealed} webhook endpoint secret(s) stored before encryption was turned on`);
  }
}
