import { startFakeMiniMax } from '../test/fakes/fake-minimax';

/**
 * The speech benchmark's upstream, in its own process (forked with IPC by bench/speech.ts): the fake
 * MiniMax T2A v2 of the e2e tests (hex audio in JSON or SSE; its tone is encoded once per shape).
 * Sends `{url}` once listening; answers 'counts' with the T2A requests received and 'last' with the
 * body of the latest one (what the gateway really sent); exits when its parent goes away.
 */

export interface SpeechUpstreamCounts {
  t2a: number;
}

/** The fake logs every request for tests to inspect; a benchmark sends many, so the log is emptied often. */
const LOG_TRIM_INTERVAL_MS = 200;
const T2A_PATH = '/v1/t2a_v2';

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/speech-upstream.js must be forked with an IPC channel');
  const fake = await startFakeMiniMax({ name: 'bench-minimax' });
  let seen = 0;
  let last: unknown = null;
  const trim = (): void => {
    const t2a = fake.requests.filter((r) => r.path === T2A_PATH);
    seen += t2a.length;
    if (t2a.length > 0) last = t2a[t2a.length - 1].body;
    fake.reset();
    fake.urls.length = 0;
  };
  const timer = setInterval(trim, LOG_TRIM_INTERVAL_MS);

  process.on('message', (message) => {
    if (message === 'counts' || message === 'last') trim();
    if (message === 'counts') process.send?.({ counts: { t2a: seen } satisfies SpeechUpstreamCounts });
    if (message === 'last') process.send?.({ last });
  });
  process.once('disconnect', () => {
    clearInterval(timer);
    void fake.close().finally(() => process.exit(0));
  });
  process.send({ url: fake.url });
}

main().catch((err: Error) => {
  process.stderr.write(`speech upstream failed: ${err.message}\n`);
  process.exit(1);
});
