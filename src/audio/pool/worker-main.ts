import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FromWorker, ToWorker } from './protocol';
import { liveFlacEncoders } from '../flac';
import { createJob, JobError, type WorkerJob } from './worker-jobs';

/*
 * Entry of an audio worker process (forked by AudioPool). Jobs share the process: one CPU slice runs at
 * a time and the jobs take turns between slices, so messages (credit, cancel, ping) are read between them.
 */

const jobs = new Map<number, WorkerJob>();
let running = false;

function send(message: FromWorker): void {
  process.send?.(message);
}

function fail(id: number, err: unknown): void {
  const job = jobs.get(id);
  jobs.delete(id);
  job?.close();
  const code = err instanceof JobError ? err.code : 'failed';
  send({ t: 'failed', id, code, message: err instanceof Error ? err.message : String(err) });
}

/** The first runnable job in turn order; it then goes to the back of the line. */
function nextRunnable(): [number, WorkerJob] | null {
  for (const entry of jobs) {
    if (entry[1].runnable()) {
      jobs.delete(entry[0]);
      jobs.set(entry[0], entry[1]);
      return entry;
    }
  }
  return null;
}

async function loop(): Promise<void> {
  for (let next = nextRunnable(); next; next = nextRunnable()) {
    const [id, job] = next;
    try {
      await job.step();
    } catch (err) {
      fail(id, err);
    }
    // lets pings, credit and cancels in between two slices
    await nextTurn();
  }
  running = false;
}

function kick(): void {
  if (running) return;
  running = true;
  void loop();
}

function onMessage(message: ToWorker): void {
  switch (message.t) {
    case 'ping':
      return send({ t: 'pong', seq: message.seq });
    case 'start':
      if (message.spec.kind === 'stats')
        return send({ t: 'done', id: message.id, result: { jobs: jobs.size, flacEncoders: liveFlacEncoders() } });
      jobs.set(
        message.id,
        createJob(message.id, message.spec, message.credit, (out) => {
          // a job that finished or failed leaves the table; its later sends (none expected) would be stale
          if (out.t === 'done') jobs.delete(message.id);
          send(out);
        }),
      );
      break;
    case 'credit':
      jobs.get(message.id)?.grant(message.n);
      break;
    case 'input':
      jobs.get(message.id)?.input(message.data);
      break;
    case 'end':
      jobs.get(message.id)?.end();
      break;
    case 'cancel': {
      const job = jobs.get(message.id);
      jobs.delete(message.id);
      job?.close();
      return;
    }
  }
  kick();
}

process.on('message', (message) => onMessage(message as ToWorker));
// the gateway went away (crash, kill -9): nothing is left to work for
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });
