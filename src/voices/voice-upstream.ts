import { Injectable, Logger } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { GatewayConfig } from '../config/gateway-config';
import { AdapterRegistry } from '../providers/adapter-registry';
import { requestFields } from '../config/logging';
import { toUpstreamFailure } from '../providers/http';
import { classify } from '../failover/chain';
import { CircuitRegistry } from '../failover/circuit-registry';
import type { ProviderAdapter, UpstreamVoice } from '../providers/provider-adapter';
import type { AuthenticatedKey } from '../keys/key-directory';

/** Cloning uploads and analyses audio: allow more than a speech step's first byte. */
const VOICE_CALL_TIMEOUT_MS = 60_000;
const UPSTREAM_DELETE_TIMEOUT_MS = 10_000;

/** How a custom voice is made. */
export type Creation = 'clone' | 'design';

/** The provider side of custom voices: the provider that makes a key's voice, the call to it, removal there. */
@Injectable()
export class VoiceUpstream {
  // these lines log under the custom voice service's name, as operators know them
  private readonly logger = new Logger('CustomVoicesService');

  constructor(
    private readonly adapters: AdapterRegistry,
    private readonly circuits: CircuitRegistry,
    private readonly gateway: GatewayConfig,
  ) {}

  /** The first speech provider of the key's chain that can make the voice and whose circuit is not open. */
  providerFor(key: AuthenticatedKey, creation: Creation): { provider: string; adapter: ProviderAdapter } {
    const can = (adapter: ProviderAdapter | undefined): adapter is ProviderAdapter =>
      creation === 'clone' ? !!adapter?.cloneVoice : !!adapter?.designVoice;
    const capable = [...new Set(key.chain.map((step) => step.provider))]
      .filter((name) => this.gateway.provider(name)?.capabilities.includes('speech'))
      .flatMap((provider) => {
        const adapter = this.adapters.get(provider);
        return can(adapter) ? [{ provider, adapter }] : [];
      });
    if (capable.length === 0) {
      const kinds = creation === 'clone' ? 'minimax or openai' : 'minimax';
      throw new DomainError(
        'voice_creation_not_supported',
        `No speech provider in this key's chain can ${creation} voices (a ${kinds} provider can).`,
      );
    }
    const available = capable.find((c) => this.circuits.isAvailable(c.provider));
    if (!available) {
      throw new DomainError(
        'no_provider_available',
        `Every provider that can ${creation} voices for this key is down (${capable.map((c) => c.provider).join(', ')}); retry later.`,
      );
    }
    return available;
  }

  /**
   * One upstream call; its failure becomes the documented error (the provider's refusal keeps its status).
   * `requestId`: the request it serves, named on the warning a failure logs.
   */
  async call<T>(
    provider: string,
    creation: Creation,
    requestId: string,
    call: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    try {
      return await call(AbortSignal.timeout(VOICE_CALL_TIMEOUT_MS));
    } catch (err) {
      const failure = toUpstreamFailure(err);
      const { outcome } = failure;
      if (outcome.kind === 'timeout') {
        throw new DomainError(
          'upstream_timeout',
          `${provider} did not ${creation} the voice within ${VOICE_CALL_TIMEOUT_MS / 1000} s.`,
        );
      }
      const verdict = classify(outcome);
      const detail =
        (outcome.kind === 'http' || outcome.kind === 'provider_error' ? outcome.message : undefined) ?? verdict.reason;
      // a voice has no next step: a refusal that names the step is relayed like every other
      if (verdict.verdict === 'client_error' || verdict.verdict === 'misconfigured_step') {
        throw new DomainError('upstream_rejected', `${provider} rejected the voice: ${detail}`, {
          status: outcome.kind === 'http' ? outcome.status : 400,
        });
      }
      this.logger.warn(requestFields(requestId), `${provider} failed to ${creation} a voice: ${verdict.reason}`);
      throw new DomainError(
        'voice_creation_failed',
        `${provider} could not ${creation} the voice (${verdict.reason}); retry later.`,
      );
    }
  }

  /**
   * One deletion at the provider: null once it is done (or the provider kind keeps no voices to delete), else why it
   * failed (VoiceRemovals keeps the voice and tries again). `requestId`: the request it serves, when one does.
   */
  async remove(provider: string, voice: UpstreamVoice, requestId?: string): Promise<string | null> {
    const adapter = this.adapters.get(provider);
    try {
      if (!adapter) throw new Error(`${provider} is not configured`);
      await adapter.deleteVoice?.(voice, AbortSignal.timeout(UPSTREAM_DELETE_TIMEOUT_MS));
      return null;
    } catch (err) {
      const message = (err as Error).message;
      this.logger.warn(
        requestId === undefined ? {} : requestFields(requestId),
        `could not delete voice ${voice.voiceId} at ${provider}: ${message}`,
      );
      return message;
    }
  }
}
