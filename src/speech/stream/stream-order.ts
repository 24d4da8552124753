import { isStreamingFormat } from '../../audio/encoders';
import { DomainError } from '../../common/errors/domain-error';
import { SYNC_TEXT_LIMIT, type SpeechJob, toSpeechJob } from '../speech-job';
import type { ClientMessage, TaskStartMessage } from './stream-messages';

/** `starting`: task_start received and being checked; text may already arrive and waits for it. */
export type StreamState = 'idle' | 'starting' | 'started' | 'finishing' | 'closed';

/** Text and task_finish are taken once task_start was received (they wait for its checks). */
const accepting = (state: StreamState): boolean => state === 'starting' || state === 'started';

/** The refusal of a client message the task's state does not allow (decisions §7), or null when it may go on. */
export function outOfOrder(event: ClientMessage['event'], state: StreamState): DomainError | null {
  const refuse = (message: string): DomainError => new DomainError('invalid_value', message, { param: 'event' });
  if (event === 'task_start')
    return state === 'idle' ? null : refuse('task_start was already sent on this connection.');
  if (!accepting(state)) return refuse(`Send task_start before ${event}.`);
  return null;
}

/** The task's job from task_start: every field but the text (MiniMax's optional fields go to a MiniMax step as sent). */
export function streamJob(body: TaskStartMessage): SpeechJob {
  const job = toSpeechJob({ ...body, text: ' ' }, SYNC_TEXT_LIMIT);
  if (!isStreamingFormat(job.output.format))
    throw new DomainError(
      'invalid_value',
      `${job.output.format} cannot be streamed (its header needs the length): use mp3, pcm, flac, opus or pcmu_raw.`,
      {
        param: 'audio_setting.format',
      },
    );
  return job;
}
