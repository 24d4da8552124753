import { Init1763683200000 } from './1763683200000-init';
import { Failover1763700000000 } from './1763700000000-failover';
import { SpeechTasks1763710000000 } from './1763710000000-speech-tasks';
import { Webhooks1763720000000 } from './1763720000000-webhooks';

/** Every migration in order; `npm run migration:generate` writes a file, add its class here. */
export const MIGRATIONS = [Init1763683200000, Failover1763700000000, SpeechTasks1763710000000, Webhooks1763720000000];
