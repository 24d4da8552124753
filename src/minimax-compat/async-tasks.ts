import { DomainError } from '../common/errors/domain-error';
import type { SpeechTaskDto, SpeechTaskVoiceSwitchDto } from '../speech/tasks/dto/speech-task.dto';
import type { SpeechTaskStatus } from '../speech/tasks/speech-task.entity';
import { BaseResp, MINIMAX_OK } from './minimax-errors';
import type { MiniMaxFileDto } from './minimax-files.service';

/** MiniMax's task states (its query reference writes them capitalised in prose and examples). */
const STATUS: Record<SpeechTaskStatus, string> = {
  queued: 'Processing',
  processing: 'Processing',
  completed: 'Success',
  failed: 'Failed',
  expired: 'Expired',
};

/** The gateway's ids are strings (`task_…`); MiniMax's are numbers: clients carry them back as they got them. */
export interface T2aAsyncResponse {
  task_id: string;
  task_token: string;
  file_id: string;
  usage_characters: number;
  base_resp: BaseResp;
}

export interface T2aAsyncQueryResponse {
  task_id: string;
  status: string;
  file_id?: string;
  /** The gateway's addition (decisions §7): where the task went on with another provider's voice, as its task record lists it. */
  voice_switches: SpeechTaskVoiceSwitchDto[];
  base_resp: BaseResp;
}

export interface FileRetrieveResponse {
  file: MiniMaxFileDto | (Omit<MiniMaxFileDto, 'file_id'> & { file_id: string });
  base_resp: BaseResp;
}

/** An async task's audio is its file: the same id retrieves it. */
export const submitted = (task: SpeechTaskDto): T2aAsyncResponse => ({
  task_id: task.id,
  task_token: '',
  file_id: task.id,
  usage_characters: task.characters,
  base_resp: MINIMAX_OK,
});

export const queried = (task: SpeechTaskDto): T2aAsyncQueryResponse => ({
  task_id: task.id,
  status: STATUS[task.status],
  ...(task.status === 'failed' ? {} : { file_id: task.id }),
  voice_switches: task.voice_switches,
  base_resp: MINIMAX_OK,
});

export const isTaskId = (id: string): boolean => id.startsWith('task_');

/** `files/retrieve` of a task: its download (the interface's, with the same key) once completed. */
export function taskFile(task: SpeechTaskDto, baseUrl: string): FileRetrieveResponse {
  if (task.status !== 'completed' || !task.audio) {
    throw new DomainError(
      'task_not_completed',
      `The task is ${task.status}; its file is there once the task reports Success.`,
      { param: 'file_id' },
    );
  }
  return {
    file: {
      file_id: task.id,
      bytes: task.audio.bytes,
      created_at: task.created_at,
      filename: `${task.id}.${task.audio.format}`,
      purpose: 't2a_async_v2',
      download_url: `${baseUrl}/v1/audio/speech/async/${task.id}/download`,
    },
    base_resp: MINIMAX_OK,
  };
}
