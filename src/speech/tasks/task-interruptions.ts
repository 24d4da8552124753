/** Another worker holds the task now (ours was taken to be dead), or it ended: stop without touching it. */
export class TaskLost extends Error {
  constructor(taskId: string) {
    super(`task ${taskId} is no longer held by this worker`);
    this.name = 'TaskLost';
  }
}

/** This process is stopping: the task goes back to the queue with its stored chunks. */
export class ShuttingDown extends Error {
  constructor() {
    super('the service is shutting down');
    this.name = 'ShuttingDown';
  }
}

/** Throws the signal's reason when it has fired (the work in progress stops at the next check). */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
