import type { LoggerService } from '@nestjs/common';

/**
 * The logger Nest uses until the application exists (its messages are buffered and then replayed to
 * the JSON logger): if the start fails, the buffered lines come here, and only the error's own
 * message is kept, for `startupFailure` to print as one line instead of a stack trace.
 */
export class StartupLogger implements LoggerService {
  lastError: string | null = null;

  log(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  fatal(message: unknown): void {
    this.error(message);
  }
  error(message: unknown): void {
    this.lastError = message instanceof Error ? message.message : String(message).split('\n')[0];
  }
}

/** One readable line for a failed start, then the chain of causes (each on its own line), no stack. */
export function startupFailure(err: unknown): string {
  const lines = [`Failed to start: ${err instanceof Error ? err.message : String(err)}`];
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; cause !== undefined && cause !== null && depth < 5; depth++) {
    const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : JSON.stringify(cause);
    lines.push(`  cause: ${text}`);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return `${lines.join('\n')}\n`;
}
