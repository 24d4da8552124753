import { startFakeOpenAi } from '../test/fakes/fake-openai';
import type { FakeOpenAi } from '../test/fakes/fake-openai';

/**
 * The benchmark's upstream, in its own process (forked with IPC by bench/chat.ts): one fake
 * OpenAI that answers, one that always answers 500. Sends `{ok, down}` base URLs once listening;
 * answers 'counts' with the requests each has received; exits when its parent goes away.
 */

export interface UpstreamUrls {
  ok: string;
  down: string;
}

export interface UpstreamCounts {
  ok: number;
  down: number;
}

/** The fakes log every request for tests to inspect; a benchmark sends millions, so the log is emptied often. */
const LOG_TRIM_INTERVAL_MS = 200;

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/upstream.js must be forked with an IPC channel');
  const ok = await startFakeOpenAi({ name: 'upstream-ok' });
  const down = await startFakeOpenAi({ name: 'upstream-down', mode: 'error500' });
  const seen = { ok: 0, down: 0 };
  const trim = (fake: FakeOpenAi, name: keyof UpstreamCounts): void => {
    seen[name] += fake.count();
    fake.reset();
  };
  const timer = setInterval(() => {
    trim(ok, 'ok');
    trim(down, 'down');
  }, LOG_TRIM_INTERVAL_MS);
  const counts = (): UpstreamCounts => ({ ok: seen.ok + ok.count(), down: seen.down + down.count() });

  process.on('message', (message) => {
    if (message === 'counts') process.send?.({ counts: counts() });
  });
  process.once('disconnect', () => {
    clearInterval(timer);
    void Promise.all([ok.close(), down.close()]).finally(() => process.exit(0));
  });
  const urls: UpstreamUrls = { ok: ok.url, down: down.url };
  process.send({ urls });
}

main().catch((err: Error) => {
  process.stderr.write(`upstream failed: ${err.message}\n`);
  process.exit(1);
});
