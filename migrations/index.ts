import { Init1763683200000 } from './1763683200000-init';
import { Failover1763700000000 } from './1763700000000-failover';
import { SpeechTasks1763710000000 } from './1763710000000-speech-tasks';
import { Webhooks1763720000000 } from './1763720000000-webhooks';
import { CustomVoices1763730000000 } from './1763730000000-custom-voices';
import { RateLimits1763735000000 } from './1763735000000-rate-limits';
import { EventCursor1763740000000 } from './1763740000000-event-cursor';
import { FairTasks1763750000000 } from './1763750000000-fair-tasks';
import { StreamTickets1763760000000 } from './1763760000000-stream-tickets';
import { MiniMaxFiles1763770000000 } from './1763770000000-minimax-files';
import { WebhookLanes1796083236000 } from './1796083236000-webhook-lanes';
import { VoiceRemovals1796085361000 } from './1796085361000-voice-removals';
import { TaskTraceparent1796086000000 } from './1796086000000-task-traceparent';
import { TaskVoicePin1796090000000 } from './1796090000000-task-voice-pin';
import { EventTraceparent1796095000000 } from './1796095000000-event-traceparent';

/** Every migration in order; `npm run migration:generate` writes a file, add its class here. */
export const MIGRATIONS = [
  Init1763683200000,
  Failover1763700000000,
  SpeechTasks1763710000000,
  Webhooks1763720000000,
  CustomVoices1763730000000,
  RateLimits1763735000000,
  EventCursor1763740000000,
  FairTasks1763750000000,
  StreamTickets1763760000000,
  MiniMaxFiles1763770000000,
  WebhookLanes1796083236000,
  VoiceRemovals1796085361000,
  TaskTraceparent1796086000000,
  TaskVoicePin1796090000000,
  EventTraceparent1796095000000,
];
