import { DataSource } from 'typeorm';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { eventually } from './support/failover';
import { isolatedDatabase } from './support/receiver';
import { CHUNK_3, chunksSpokenBy, finished, pinGateway, pinKey, submitTask } from './support/voice-pin';

jest.setTimeout(120000);

/** Long enough for the app to close and start again inside it, even on a loaded machine. */
const PIN_WAIT_MS = 12000;
/** How long into the wait the first app is closed: the restart then comes well after the wait began. */
const CLOSE_AFTER_MS = 3000;

interface PinRow {
  voice_pin: { provider: string; voice: string } | null;
  since: string | null;
}

/** The pin and its wait are the task's, stored: an app closed and started again mid-wait goes on with both. */
describe('async speech task voice pin across a restart', () => {
  let a: FakeMiniMax;
  let b: FakeMiniMax;
  let database: { url: string; drop(): Promise<void> };
  const apps: TestApp[] = [];

  const boot = async (): Promise<TestApp> => {
    const t = await startApp({
      gateway: pinGateway(a, b),
      env: { DATABASE_URL: database.url, SVC_TASK_PIN_WAIT_MS: String(PIN_WAIT_MS) },
    });
    apps.push(t);
    return t;
  };

  beforeAll(async () => {
    [a, b] = await Promise.all([startFakeMiniMax({ name: 'mm-a' }), startFakeMiniMax({ name: 'mm-b' })]);
    database = await isolatedDatabase('voice_pin_restart');
  });
  afterAll(async () => {
    for (const t of apps) await t.close().catch(() => undefined);
    await Promise.all([a?.close(), b?.close()]);
    await database?.drop();
  });

  it('keeps the pin and the start of its wait: the switch comes when the first wait ends, not a new one', async () => {
    a.failText = CHUNK_3;
    const first = await boot();
    const key = await pinKey(first, 'pin restart');
    const id = await submitTask(first, key.secret);
    const pinRow = async (t: TestApp): Promise<PinRow> =>
      (
        await t.app
          .get(DataSource)
          .query<PinRow[]>(`SELECT voice_pin, pin_waits ->> '3' AS since FROM speech_tasks WHERE id = $1`, [id])
      )[0];
    const waiting = await eventually(
      () => pinRow(first),
      (row) => row.since !== null,
      20000,
      'chunk 3 to wait',
    );
    expect(waiting.voice_pin).toMatchObject({ provider: 'mm-a' });
    const sinceMs = new Date(waiting.since ?? 0).getTime();
    // a restart that came at once could not tell a kept wait from a new one: it comes some seconds in
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, sinceMs + CLOSE_AFTER_MS - Date.now())));
    await first.close();
    apps.splice(apps.indexOf(first), 1);
    const triedBefore = chunksSpokenBy(a).filter((c) => c === 3).length;

    const second = await boot();
    const restartedAt = Date.now();
    // the restarted app tries chunk 3 on the pinned step again (a lost pin would make it the task's first chunk, unlisted)
    await eventually(
      () => chunksSpokenBy(a).filter((c) => c === 3).length,
      (n) => n > triedBefore,
      20000,
      'chunk 3 to be tried again on mm-a',
    );

    const done = await finished(second, key.secret, id);
    expect(done).toMatchObject({ status: 'completed', provider: 'mm-b', fallback_level: 1 });
    expect(done.voice_switches).toEqual([
      expect.objectContaining({ chunk: 3, from: expect.objectContaining({ provider: 'mm-a' }) }),
    ]);
    const sinceSeconds = sinceMs / 1000;
    const switchedAt = done.voice_switches[0].at;
    // not before the wait measured from chunk 3's first failure, and sooner than a wait started again at the restart
    expect(switchedAt).toBeGreaterThanOrEqual(Math.floor(sinceSeconds + PIN_WAIT_MS / 1000));
    expect(switchedAt * 1000).toBeLessThan(restartedAt + PIN_WAIT_MS - 1000);
    // chunks 0 to 2 were stored before the restart and kept: mm-b spoke chunk 3 on, and only those
    expect([...new Set(chunksSpokenBy(b))].sort()).toEqual([3, 4, 5]);
  });
});
