import type { GatewayConfig } from '../config/gateway-config';
import type { Capability } from '../config/provider-kinds';
import type { ChainStepDto } from '../config/chain-step.dto';

/** A model a key's chain serves: its entry step's provider, and what it is used for. */
export interface ServedModel {
  id: string;
  ownedBy: string;
  capabilities: Capability[];
}

/**
 * The models a chain serves, in chain order, each once: a step counts when its provider is configured
 * and can serve something; the entry step (the first step naming the model) owns it.
 */
export function servedModels(chain: ChainStepDto[], gateway: GatewayConfig): ServedModel[] {
  const models = new Map<string, ServedModel>();
  for (const step of chain) {
    const provider = gateway.provider(step.provider);
    if (!provider) continue;
    const seen = models.get(step.model);
    if (!seen)
      models.set(step.model, { id: step.model, ownedBy: provider.name, capabilities: [...provider.capabilities] });
    else
      for (const capability of provider.capabilities)
        if (!seen.capabilities.includes(capability)) seen.capabilities.push(capability);
  }
  return [...models.values()];
}

/** The ids of the chain's models of one capability (what `model_not_supported` offers instead). */
export function modelIdsFor(chain: ChainStepDto[], gateway: GatewayConfig, capability: Capability): string[] {
  return servedModels(chain, gateway)
    .filter((model) => model.capabilities.includes(capability))
    .map((model) => model.id);
}
