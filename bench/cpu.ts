import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Where the machine's CPU went during a cell: the benchmark's own processes by role, and the rest
 * ("other": processes of people sharing the machine), in cores. Linux /proc only.
 */

export type Roles = Record<string, number[]>;

export interface CpuSnapshot {
  /** Busy and total jiffies of all CPUs. */
  busy: number;
  total: number;
  /** Jiffies (utime + stime) per role. */
  roles: Record<string, number>;
}

export type CpuUse = Record<string, number> & { other: number };

function machineJiffies(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  // cpu user nice system idle iowait irq softirq steal ...; busy counts only time processes are charged with
  // (interrupts and loopback softirqs belong to no process, steal to the host)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const busy = user + nice + system;
  return { busy, total: busy + idle + iowait + irq + softirq + steal };
}

/** Clock ticks a second of /proc's utime and stime (USER_HZ: 100 on every Linux build this runs on). */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system, every thread) a process has used so far; 0 once it is gone. */
export const processCpuSeconds = (pid: number): number => processJiffies(pid) / TICKS_PER_SECOND;

function processJiffies(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // gone (or not yet there): nothing to add
  }
}

export function snapshot(roles: Roles): CpuSnapshot {
  const sums: Record<string, number> = {};
  for (const [role, pids] of Object.entries(roles)) sums[role] = pids.reduce((n, pid) => n + processJiffies(pid), 0);
  return { ...machineJiffies(), roles: sums };
}

/** Cores used per role between two snapshots; a role's processes that appeared in between count from zero. */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot, cores: number): CpuUse {
  const total = Math.max(1, after.total - before.total);
  const toCores = (jiffies: number): number => (Math.max(0, jiffies) / total) * cores;
  const use: Record<string, number> = {};
  let ours = 0;
  for (const role of Object.keys(after.roles)) {
    const spent = after.roles[role] - (before.roles[role] ?? 0);
    ours += spent;
    use[role] = toCores(spent);
  }
  return { ...use, other: toCores(after.busy - before.busy - ours) };
}

/**
 * Waits (at most `maxWaitMs`) until processes outside `roles` use less than `threshold` cores
 * over a one-second window; returns what the last window showed.
 */
export async function waitForQuiet(
  roles: () => Roles,
  cores: number,
  threshold: number,
  maxWaitMs: number,
): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const before = snapshot(roles());
    await sleep(1000);
    const other = cpuBetween(before, snapshot(roles()), cores).other;
    if (other < threshold || Date.now() >= deadline) return other;
  }
}
