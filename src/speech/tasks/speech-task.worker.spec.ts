import { DomainError } from '../../common/errors/domain-error';
import type { JobQueue } from '../../database/job-queue';
import { MetricsService } from '../../metrics/metrics.service';
import { SpeechTaskWorker } from './speech-task.worker';
import type { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskLost } from './task-interruptions';
import { MAX_ATTEMPTS } from './task-queue';
import type { TaskRunner } from './task-runner';

const task = (attempts: number): ClaimedTask => ({
  id: 'task_1',
  keyId: 'pk_1',
  attempts,
  job: { model: 'speech-02-hd', text: 'Hi.', voiceId: 'en-us', speed: 1, vol: 1, pitch: 0, output: { format: 'mp3', sampleRate: 32000, bitrate: 128000, channels: 1 } },
  plan: [{ text: 'Hi.', chars: 3 }],
  error: null,
});

function setup(claimed: ClaimedTask | null, run: () => Promise<unknown>) {
  const repository = {
    claim: jest.fn(() => Promise.resolve(claimed)),
    fail: jest.fn(() => Promise.resolve(true)),
    release: jest.fn(() => Promise.resolve(true)),
    heartbeat: jest.fn(() => Promise.resolve(true)),
  };
  const runner = { run: jest.fn(run) };
  const worker = new SpeechTaskWorker({} as JobQueue, repository as unknown as SpeechTasksRepository, runner as unknown as TaskRunner, new MetricsService());
  return { worker, repository, runner };
}

describe('SpeechTaskWorker failure policy', () => {
  it('does nothing when the task cannot be claimed (another worker has it, or it is done)', async () => {
    const { worker, runner } = setup(null, () => Promise.resolve());
    await worker.handle('task_1');
    expect(runner.run).not.toHaveBeenCalled();
  });

  it("fails the task at once on the client's own error, with its code and message", async () => {
    const { worker, repository } = setup(task(1), () => Promise.reject(new DomainError('upstream_rejected', 'espeak rejected the request: bad text')));
    await worker.handle('task_1');
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, { code: 'upstream_rejected', message: 'espeak rejected the request: bad text' });
    expect(repository.release).not.toHaveBeenCalled();
  });

  it('returns the task to the queue and rethrows (pg-boss retries) on an upstream outage', async () => {
    const outage = new DomainError('all_providers_failed', 'Every provider failed: espeak (HTTP 503).');
    const { worker, repository } = setup(task(1), () => Promise.reject(outage));
    await expect(worker.handle('task_1')).rejects.toBe(outage);
    expect(repository.release).toHaveBeenCalledWith('task_1', worker.workerId, { code: 'all_providers_failed', message: outage.message }, false);
    expect(repository.fail).not.toHaveBeenCalled();
  });

  it('retries a route this replica cannot plan (its providers file may lack one the others have)', async () => {
    const { worker, repository } = setup(task(1), () => Promise.reject(new DomainError('model_not_supported', "The model 'speech-02-hd' is not served.")));
    await expect(worker.handle('task_1')).rejects.toBeInstanceOf(DomainError);
    expect(repository.release).toHaveBeenCalled();
    expect(repository.fail).not.toHaveBeenCalled();
  });

  it('fails the task on the last attempt instead of retrying', async () => {
    const { worker, repository } = setup(task(MAX_ATTEMPTS), () => Promise.reject(new DomainError('no_provider_available', 'Every provider is unavailable.')));
    await worker.handle('task_1');
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, { code: 'no_provider_available', message: 'Every provider is unavailable.' });
    expect(repository.release).not.toHaveBeenCalled();
  });

  it('gives up on a task claimed more often than allowed (it kept crashing its workers) without running it', async () => {
    const { worker, repository, runner } = setup({ ...task(MAX_ATTEMPTS + 1), error: { code: 'internal_error', message: 'boom' } }, () => Promise.resolve());
    await worker.handle('task_1');
    expect(runner.run).not.toHaveBeenCalled();
    expect(repository.fail).toHaveBeenCalledWith('task_1', worker.workerId, { code: 'internal_error', message: 'boom' });
  });

  it('leaves a task alone that another worker took over, and hides internal errors from the record', async () => {
    const lost = setup(task(1), () => Promise.reject(new TaskLost('task_1')));
    await lost.worker.handle('task_1');
    expect(lost.repository.fail).not.toHaveBeenCalled();
    expect(lost.repository.release).not.toHaveBeenCalled();

    const bug = new TypeError('x is undefined');
    const internal = setup(task(1), () => Promise.reject(bug));
    await expect(internal.worker.handle('task_1')).rejects.toBe(bug);
    expect(internal.repository.release).toHaveBeenCalledWith('task_1', internal.worker.workerId, { code: 'internal_error', message: 'The task failed with an internal error.' }, false);
  });
});
