import { DataSource } from 'typeorm';
import { JobQueue } from '../src/database/job-queue';
import type { TestApp } from './support/app';
import { appOnDatabase, BOTH_DATABASES } from './support/both-databases';

async function waitFor(check: () => boolean, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(BOTH_DATABASES)('job queue on %s', (_, database) => {
  const app = appOnDatabase(database, 'svc-jobs-');
  let t: TestApp;
  beforeAll(() => {
    t = app();
  });

  it('runs a sent job once, and a job sent in a rolled-back transaction never', async () => {
    const queue = t.app.get(JobQueue);
    const name = `test-jobs-${Date.now()}`;
    await queue.createQueue(name);
    const seen: string[] = [];
    await queue.work<{ n: string }>(name, { pollingIntervalSeconds: 0.5 }, (job) => {
      seen.push(job.data.n);
      return Promise.resolve();
    });
    await t.app
      .get(DataSource)
      .transaction(async (manager) => {
        await queue.send(name, { n: 'rolled-back' }, {}, manager);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await t.app.get(DataSource).transaction(async (manager) => {
      await queue.send(name, { n: 'committed' }, {}, manager);
    });
    await queue.send(name, { n: 'plain' });
    await waitFor(() => seen.length >= 2);
    await new Promise((r) => setTimeout(r, 1200));
    expect(seen.sort()).toEqual(['committed', 'plain']);
  });
});
