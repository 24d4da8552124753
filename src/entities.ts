import { ConsentRecordingEntity, VoiceConsentEntity } from './consents/voice-consent.entity';
import { GatewayEventEntity } from './failover/gateway-event.entity';
import { ProviderCircuitEntity } from './failover/provider-circuit.entity';
import { StepQuotaCounterEntity } from './quotas/step-quota-counter.entity';
import { ProxyKeyEntity } from './keys/proxy-key.entity';
import { MiniMaxFileEntity } from './minimax-compat/minimax-file.entity';
import { RateLimitCounterEntity } from './quotas/rate-limit-counter.entity';
import { StreamTicketEntity } from './speech/stream/tickets/stream-ticket.entity';
import { SpeechTaskChunkEntity, SpeechTaskEntity, SpeechTaskResultEntity } from './speech/tasks/speech-task.entity';
import { UsageRecordEntity } from './usage/usage-record.entity';
import { CustomVoiceEntity } from './voices/custom-voice.entity';
import { VoiceRemovalEntity } from './voices/voice-removal.entity';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhooks/webhook-delivery.entity';
import { WebhookEndpointEntity } from './webhooks/webhook-endpoint.entity';
import { WebhookFanoutStateEntity } from './webhooks/webhook-fanout.entity';

/** Every entity, for the TypeORM CLI and the schema test (the service loads each feature module's own). */
export const ENTITIES = [
  ProxyKeyEntity,
  VoiceConsentEntity,
  ConsentRecordingEntity,
  ProviderCircuitEntity,
  GatewayEventEntity,
  UsageRecordEntity,
  StepQuotaCounterEntity,
  RateLimitCounterEntity,
  SpeechTaskEntity,
  SpeechTaskChunkEntity,
  SpeechTaskResultEntity,
  WebhookEndpointEntity,
  WebhookDeliveryEntity,
  WebhookAttemptEntity,
  WebhookFanoutStateEntity,
  CustomVoiceEntity,
  VoiceRemovalEntity,
  StreamTicketEntity,
  MiniMaxFileEntity,
];
