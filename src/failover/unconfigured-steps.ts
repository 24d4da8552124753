import type { GatewayConfig } from '../config/gateway-config';
import { KIND_TRAITS, type Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';

/** A chain step whose provider this gateway does not have (left out of the YAML for an empty api_key, or removed). */
export interface UnconfiguredStep {
  chainIndex: number;
  provider: string;
  model: string;
  why: string;
}

/** e.g. `Step chain[0] (provider 'minimax', model 'speech-02-hd') was skipped: its provider is not configured (its api_key is empty).` */
export function describeUnconfigured(steps: UnconfiguredStep[]): string {
  return steps
    .map(
      (s) =>
        `Step chain[${s.chainIndex}] (provider '${s.provider}', model '${s.model}') was skipped: its provider is not configured (${s.why}).`,
    )
    .join(' ');
}

/** The key's steps of `capability` (as far as the provider's kind tells) whose provider is not configured on this gateway. */
export function unconfiguredSteps(
  gateway: GatewayConfig,
  key: AuthenticatedKey,
  capability: Capability,
): UnconfiguredStep[] {
  return key.chain.flatMap((step, chainIndex) => {
    const why = gateway.whyNotConfigured(step.provider);
    if (why === null) return [];
    const leftOut = gateway.leftOut.find((p) => p.name === step.provider);
    if (leftOut && !KIND_TRAITS[leftOut.kind].capabilities.includes(capability)) return [];
    return [{ chainIndex, provider: step.provider, model: step.model, why }];
  });
}

/**
 * What an error adds about the key's steps of `capability` that `matters` and whose provider is not configured: a
 * sentence for each, after a space; empty when there is none.
 */
export function unconfiguredNote(
  gateway: GatewayConfig,
  key: AuthenticatedKey,
  capability: Capability,
  matters: (step: UnconfiguredStep) => boolean,
): string {
  const steps = unconfiguredSteps(gateway, key, capability).filter(matters);
  return steps.length > 0 ? ` ${describeUnconfigured(steps)}` : '';
}
