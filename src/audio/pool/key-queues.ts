/** A job as the queues see it: an id and the key it is run for. */
export interface KeyedJob {
  readonly id: number;
  readonly key: string;
}

/**
 * The audio pool's waiting room, fair across keys: one queue per key in arrival order, a running count per key
 * under its share (`jobsPerKey`), and free slots handed to the key served longest ago. A job waits at most
 * `maxWaitMs` (then `expired` hears of it); a key may have at most `queuePerKey` waiting.
 */
export class KeyQueues<J extends KeyedJob> {
  private readonly queues = new Map<string, J[]>();
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private waiting = 0;
  /** Running jobs per key. */
  private readonly runningByKey = new Map<string, number>();
  /** When each key with jobs was last given a slot (a turn number): the longest unserved goes first. */
  private readonly lastServed = new Map<string, number>();
  private turn = 0;

  constructor(
    private readonly jobsPerKey: number,
    readonly queuePerKey: number,
    private readonly maxWaitMs: number,
    private readonly expired: (job: J) => void,
  ) {}

  /** Jobs waiting, over every key. */
  get size(): number {
    return this.waiting;
  }

  /** Queues `job` behind its key's others. */
  add(job: J): void {
    const queue = this.queues.get(job.key);
    if (queue) queue.push(job);
    else this.queues.set(job.key, [job]);
    this.waiting += 1;
  }

  /** Whether `job` is still waiting in its key's queue past that key's bound. */
  overBound(job: J): boolean {
    return (this.queues.get(job.key)?.length ?? 0) > this.queuePerKey;
  }

  /** Starts the wait bound of a job that has to wait: past it, the job leaves the queue and `expired` is told. */
  await(job: J): void {
    const timer = setTimeout(() => {
      if (this.remove(job.id)) this.expired(job);
    }, this.maxWaitMs).unref();
    this.timers.set(job.id, timer);
  }

  /** Takes job `id` out of its queue; null when it is not waiting. */
  remove(id: number): J | null {
    for (const [key, queue] of this.queues) {
      const at = queue.findIndex((job) => job.id === id);
      if (at >= 0) return this.unqueue(key, queue, at);
    }
    return null;
  }

  /** Of the keys with a waiting job and a running count under their share, the one served longest ago. */
  nextKey(): string | null {
    let best: string | null = null;
    let bestTurn = Infinity;
    for (const key of this.queues.keys()) {
      if ((this.runningByKey.get(key) ?? 0) >= this.jobsPerKey) continue;
      const served = this.lastServed.get(key) ?? 0;
      if (served < bestTurn) [best, bestTurn] = [key, served];
    }
    return best;
  }

  /** The oldest waiting job of `key` (from `nextKey`), now counted as running; `waited`: its wait bound was armed. */
  take(key: string): { job: J; waited: boolean } {
    const queue = this.queues.get(key)!;
    const waited = this.timers.has(queue[0].id);
    const job = this.unqueue(key, queue, 0);
    this.lastServed.set(key, ++this.turn);
    this.runningByKey.set(key, (this.runningByKey.get(key) ?? 0) + 1);
    return { job, waited };
  }

  /** A job of `key` that ran has ended: its key's running count goes down. */
  ended(key: string): void {
    const left = (this.runningByKey.get(key) ?? 1) - 1;
    if (left > 0) this.runningByKey.set(key, left);
    else this.runningByKey.delete(key);
    this.tidy(key);
  }

  /** Every waiting job, taken out (the pool is closing). */
  drain(): J[] {
    const all: J[] = [];
    for (const [key, queue] of this.queues) while (queue.length > 0) all.push(this.unqueue(key, queue, 0));
    return all;
  }

  private unqueue(key: string, queue: J[], at: number): J {
    const [job] = queue.splice(at, 1);
    const timer = this.timers.get(job.id);
    if (timer) {
      clearTimeout(timer);
      this.timers.delete(job.id);
    }
    this.waiting -= 1;
    if (queue.length === 0) {
      this.queues.delete(key);
      this.tidy(key);
    }
    return job;
  }

  /** A key with nothing running and nothing waiting is forgotten (its next job is a newcomer's). */
  private tidy(key: string): void {
    if (!this.runningByKey.has(key) && !this.queues.has(key)) this.lastServed.delete(key);
  }
}
