import type { VoicePin } from './voice-pin';

/**
 * One run's view of its task's voice: the pin as stored, and the chunks waiting for their pinned step. While one
 * waits, the other lanes start no later chunk (the task may be about to change voice from that chunk on, and the
 * chunks after it would be spoken again); the chunks still to speak, in order, including those a switch gave back.
 */
export class TaskVoice {
  /** Chunks taken and not finished. */
  private readonly active = new Set<number>();
  private readonly waiting = new Set<number>();
  private wakers: Array<() => void> = [];

  constructor(
    public pin: VoicePin | null,
    private readonly queue: number[],
  ) {
    queue.sort((a, b) => a - b);
  }

  get remaining(): number {
    return this.queue.length;
  }

  /** The next chunk to speak (the lowest), or undefined when none is left. */
  take(): number | undefined {
    const idx = this.queue.shift();
    if (idx !== undefined) this.active.add(idx);
    return idx;
  }

  /** A chunk before `idx` is still being spoken: `idx` may not switch the voice yet (the switch names the first chunk of the new voice). */
  speakingBefore(idx: number): boolean {
    for (const other of this.active) if (other < idx) return true;
    return false;
  }

  /** Chunks a switch dropped (spoken by the old step after the switch's chunk): spoken again, in order. */
  giveBack(chunks: number[]): void {
    for (const idx of chunks) if (!this.queue.includes(idx)) this.queue.push(idx);
    this.queue.sort((a, b) => a - b);
  }

  hold(idx: number): void {
    this.waiting.add(idx);
  }

  /** The chunk is stored, or its run failed. */
  finish(idx: number): void {
    this.active.delete(idx);
    if (!this.waiting.delete(idx) || this.waiting.size > 0) return;
    const wakers = this.wakers;
    this.wakers = [];
    for (const wake of wakers) wake();
  }

  /** Resolves once no chunk waits for its pinned step, or when `signal` fires. */
  async clear(signal: AbortSignal): Promise<void> {
    while (this.waiting.size > 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.wakers.push(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}
