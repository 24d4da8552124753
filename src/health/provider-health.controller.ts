import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { GatewayConfig } from '../config/gateway-config';
import { overallStatus } from '../failover/circuit-breaker';
import { CircuitRegistry } from '../failover/circuit-registry';
import type { AuthenticatedKey } from '../keys/key-directory';
import { ProviderHealthDto } from './dto/provider-health.dto';

@ApiTags('providers')
@ApiBearerAuth('proxy-key')
@ApiErrors(401)
@Controller('v1/providers/health')
export class ProviderHealthController {
  constructor(
    private readonly circuits: CircuitRegistry,
    private readonly gateway: GatewayConfig,
  ) {}

  /**
   * Live health of the providers in the bearer key's chain (from memory: no database round trip). A provider the
   * chain names but this gateway does not have configured (e.g. its api_key unset) is `down` with `configured: false`.
   */
  @Get()
  health(@CurrentKey() key: AuthenticatedKey): ProviderHealthDto {
    const now = Date.now();
    const providers = [...new Set(key.chain.map((step) => step.provider))].map((provider) => {
      if (!this.gateway.provider(provider))
        return {
          provider,
          status: 'down' as const,
          consecutive_failures: 0,
          cooldown_remaining_secs: 0,
          configured: false,
        };
      const accounts = this.circuits.accounts(provider, now);
      return { provider, ...this.circuits.view(provider, now), configured: true, ...(accounts && { accounts }) };
    });
    return { overall: overallStatus(providers.map((p) => p.status)), providers };
  }
}
