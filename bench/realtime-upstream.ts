import { startFakeOpenAi } from '../test/fakes/fake-openai';
import { startFakeOpenAiRealtime } from '../test/fakes/fake-openai-realtime';

/**
 * The Realtime benchmark's upstream, in its own process (forked with IPC by bench/realtime.ts): one fake OpenAI
 * host with both speech routes of the e2e tests, `POST /v1/audio/speech` (24 kHz pcm) and the Realtime WebSocket
 * (the same tone in `response.output_audio.delta` events). Sends `{url}` once listening; exits when its parent goes.
 */

/** The fakes log every request and session for tests; a benchmark makes many, so the logs are emptied often. */
const LOG_TRIM_INTERVAL_MS = 200;

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/realtime-upstream.js must be forked with an IPC channel');
  const http = await startFakeOpenAi({ name: 'bench-openai' });
  const realtime = await startFakeOpenAiRealtime({ host: http });
  const timer = setInterval(() => {
    http.reset();
    realtime.sessions.length = 0;
  }, LOG_TRIM_INTERVAL_MS);
  process.once('disconnect', () => {
    clearInterval(timer);
    void realtime
      .close()
      .then(() => http.close())
      .finally(() => process.exit(0));
  });
  process.send({ url: http.url });
}

main().catch((err: Error) => {
  process.stderr.write(`realtime upstream failed: ${err.message}\n`);
  process.exit(1);
});
