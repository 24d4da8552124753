import type { EntityManager } from 'typeorm';
import { DomainError } from '../../common/errors/domain-error';
import type { JobQueue } from '../../database/job-queue';
import { MetricsService } from '../../metrics/metrics.service';
import { SpeechTaskWorker } from './speech-task.worker';
import type { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskLost } from './task-interruptions';
import { MAX_ATTEMPTS, SPEECH_TASK_QUEUE } from './task-queue';
import type { TaskRunner } from './task-runner';

const task = (attempts: number): ClaimedTask => ({
  id: 'task_1',
  keyId: 'pk_1',
  attempts,
  job: {
    model: 'speech-02-hd',
    text: 'Hi.',
    voiceId: 'en-us',
    speed: 1,
    vol: 1,
    pitch: 0,
    output: { format: 'mp3', sampleRate: 32000, bitrate: 128000, channels: 1 },
  },
  plan: [{ text: 'Hi.', chars: 3 }],
  error: null,
  voicePin: null,
  voiceSwitch: 'allowed',
});

function setup(claimed: ClaimedTask | null, run: () => Promise<unknown>) {
  const repository = {
    claimNext: jest.fn(() => Promise.resolve(claimed)),
    fail: jest.fn(() => Promise.resolve(true)),
    release: jest.fn((..._args: unknown[]) => Promise.resolve(true)),
    heartbeat: jest.fn(() => Promise.resolve(true)),
  };
  const runner = { run: jest.fn(run) };
  const worker = new SpeechTaskWorker(
    {} as JobQueue,
    repository as unknown as SpeechTasksRepository,
    runner as unknown as TaskRunner,
    new MetricsService(),
  );
  return { worker, repository, runner };
}

describe('SpeechTaskWorker failure policy', () => {
  it('does nothing when no task is ready to claim (others hold them, they are done, or they wait out a retry delay)', async () => {
    const { worker, runner } = setup(null, () => Promise.resolve());
    await worker.handle();
    expect(runner.run).not.toHaveBeenCalled();
  });

  it("fails the task at once on the client's own error, with its code and message", async () => {
    const { worker, repository } = setup(task(1), () =>
      Promise.reject(new DomainError('upstream_rejected', 'espeak rejected the request: bad text')),
    );
    await worker.handle();
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, {
      code: 'upstream_rejected',
      message: 'espeak rejected the request: bad text',
    });
    expect(repository.release).not.toHaveBeenCalled();
  });

  it('returns the task to the queue with a job of its own due after the retry delay, which doubles per attempt', async () => {
    const outage = new DomainError('all_providers_failed', 'Every provider failed: espeak (HTTP 503).');
    const first = setup(task(1), () => Promise.reject(outage));
    // the job that ran it is done: it only woke a worker; the retry has its own job
    await first.worker.handle();
    expect(first.repository.release).toHaveBeenCalledWith(
      'task_1',
      first.worker.workerId,
      { code: 'all_providers_failed', message: outage.message },
      false,
      expect.any(Function),
      5,
    );
    expect(first.repository.fail).not.toHaveBeenCalled();

    const third = setup(task(3), () => Promise.reject(outage));
    await third.worker.handle();
    expect(third.repository.release).toHaveBeenCalledWith(
      'task_1',
      third.worker.workerId,
      expect.anything(),
      false,
      expect.any(Function),
      20,
    );
  });

  it('sends the retry job in the transaction that releases the task, due when the task may be claimed again', async () => {
    const send = jest.fn((..._args: unknown[]) => Promise.resolve('job_1'));
    const queue = { send } as unknown as JobQueue;
    const manager = {} as EntityManager;
    const { repository, runner } = setup(task(2), () =>
      Promise.reject(new DomainError('all_providers_failed', 'down')),
    );
    repository.release.mockImplementation((...args: unknown[]) =>
      (args[4] as (m: EntityManager) => Promise<unknown>)(manager).then(() => true),
    );
    const worker = new SpeechTaskWorker(
      queue,
      repository as unknown as SpeechTasksRepository,
      runner as unknown as TaskRunner,
      new MetricsService(),
    );
    await worker.handle();
    expect(send).toHaveBeenCalledWith(
      SPEECH_TASK_QUEUE,
      { taskId: 'task_1' },
      { singletonKey: 'task_1#2', startAfter: 10 },
      manager,
    );
  });

  it('retries a route this replica cannot plan (its providers file may lack one the others have)', async () => {
    const { worker, repository } = setup(task(1), () =>
      Promise.reject(new DomainError('model_not_supported', "The model 'speech-02-hd' is not served.")),
    );
    await worker.handle();
    expect(repository.release).toHaveBeenCalled();
    expect(repository.fail).not.toHaveBeenCalled();
  });

  it('fails the task on the last attempt instead of retrying', async () => {
    const { worker, repository } = setup(task(MAX_ATTEMPTS), () =>
      Promise.reject(new DomainError('no_provider_available', 'Every provider is unavailable.')),
    );
    await worker.handle();
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, {
      code: 'no_provider_available',
      message: 'Every provider is unavailable.',
    });
    expect(repository.release).not.toHaveBeenCalled();
  });

  it('gives up on a task claimed more often than allowed (it kept crashing its workers) without running it', async () => {
    const { worker, repository, runner } = setup(
      { ...task(MAX_ATTEMPTS + 1), error: { code: 'internal_error', message: 'boom' } },
      () => Promise.resolve(),
    );
    await worker.handle();
    expect(runner.run).not.toHaveBeenCalled();
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, {
      code: 'internal_error',
      message: 'boom',
    });
  });

  it('leaves a task alone that another worker took over, and hides internal errors from the record', async () => {
    const lost = setup(task(1), () => Promise.reject(new TaskLost('task_1')));
    await lost.worker.handle();
    expect(lost.repository.fail).not.toHaveBeenCalled();
    expect(lost.repository.release).not.toHaveBeenCalled();

    const bug = new TypeError('x is undefined');
    const internal = setup(task(1), () => Promise.reject(bug));
    await internal.worker.handle();
    expect(internal.repository.release).toHaveBeenCalledWith(
      'task_1',
      internal.worker.workerId,
      { code: 'internal_error', message: 'The task failed with an internal error.' },
      false,
      expect.any(Function),
      5,
    );
  });
});
