const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** One wait: a whole number with an optional unit (`s` when none). */
export const RETRY_WAIT = /^(\d+)([smhd]?)$/;

/**
 * `30s,2m,10m` → [30, 120, 600]: the waits before the 2nd, 3rd, … attempt, so N waits mean N + 1
 * attempts. An empty text means a single attempt.
 */
export function parseRetrySchedule(text: string): number[] {
  const trimmed = text.trim();
  if (trimmed === '') return [];
  return trimmed.split(',').map((part) => {
    const match = RETRY_WAIT.exec(part.trim().toLowerCase());
    if (!match) throw new Error(`'${part}' is not a wait like 30s, 2m, 1h or 1d`);
    return Number(match[1]) * UNIT_SECONDS[match[2] || 's'];
  });
}

/** Seconds to wait after attempt number `attempt` failed, or null when it was the last one. */
export function waitAfterAttempt(schedule: readonly number[], attempt: number): number | null {
  return attempt >= 1 && attempt <= schedule.length ? schedule[attempt - 1] : null;
}

export const attemptsAllowed = (schedule: readonly number[]): number => schedule.length + 1;
