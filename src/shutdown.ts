import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { EnvironmentVariables } from './config/env.schema';
import { ShutdownState } from './health/shutdown-state';
import { SpeechStreamGateway } from './speech/stream/speech-stream.gateway';

/** After the drain: time for the hooks (job workers to a safe point, batch writers, pools) before the exit is forced. */
const HOOKS_BOUND_MS = 15000;
/** How often idle keep-alive connections are closed while draining. */
const IDLE_SWEEP_MS = 100;
/** A repeat within this is the same request: Ctrl-C signals npm's whole group and npm forwards it as well. */
const SAME_SIGNAL_MS = 1000;

/**
 * Stops taking traffic and lets what is in flight finish within `graceMs`: readiness fails, the
 * listener closes (no new connection or upgrade), responses carry `Connection: close`, idle
 * keep-alive connections are closed as they appear, and speech streams speak what they have
 * queued and close with 1001. Whatever is still open at the bound is cut.
 */
export async function drain(app: INestApplication, graceMs: number): Promise<void> {
  app.get(ShutdownState).begin();
  const server = app.getHttpServer() as Server;
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  });
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    const streams = app.get(SpeechStreamGateway).drain(graceMs);
    await Promise.race([Promise.all([closed, streams]), sleep(graceMs, undefined, { ref: false })]);
  } finally {
    clearInterval(sweep);
    server.closeAllConnections();
  }
}

/**
 * SIGTERM/SIGINT: drain (above), then close the application: job workers stop taking jobs and
 * bring running ones to a safe point, the batch writers flush, the pools close; exit 0. The whole
 * is bounded (exit 1 past it), and a second signal (a second or more later) exits at once.
 */
export function exitOnSignals(app: INestApplication): void {
  let closingSince = 0;
  const stop = (signal: NodeJS.Signals): void => {
    if (closingSince > 0) {
      if (Date.now() - closingSince < SAME_SIGNAL_MS) return;
      process.exit(1);
    }
    closingSince = Date.now();
    const graceMs = app.get(EnvironmentVariables).SVC_SHUTDOWN_GRACE_MS;
    const force = setTimeout(() => {
      process.stderr.write('shutdown did not finish in time: exiting\n');
      process.exit(1);
    }, graceMs + HOOKS_BOUND_MS);
    force.unref();
    // drain() closes the listener before its first await: the line below is true when it is read
    const drained = drain(app, graceMs);
    process.stderr.write(`${signal} received: draining (up to ${graceMs} ms), then shutting down\n`);
    drained
      .then(() => app.close())
      .then(
        () => {
          // the last line says the stop finished, so a process manager's log does not end at "draining"
          process.stderr.write(`stopped after ${Date.now() - closingSince} ms: exiting 0\n`);
          process.exit(0);
        },
        (err: Error) => {
          process.stderr.write(`shutdown failed: ${err.message}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
