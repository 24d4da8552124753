import { readFileSync } from 'node:fs';

/** The parts of a V8 `.cpuprofile` (what `node --cpu-prof` writes) the summary reads. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface CostRow {
  name: string;
  selfMs: number;
  /** Share of the time the thread was busy (idle excluded). */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  busyMs: number;
  functions: CostRow[];
  /** Self time charged to the nearest package or gateway file on the stack (Node core work goes to its caller). */
  callers: CostRow[];
}

const IDLE = '(idle)';

/** A package (`node_modules/<name>`) or a compiled file of this repository; null for Node core and native frames. */
function ownerOf(url: string): string | null {
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1];
  const own = /\/dist\/(.+)\.js$/.exec(url);
  return own ? own[1] : null;
}

function shortUrl(url: string): string {
  const modules = /node_modules\/(.+)$/.exec(url);
  if (modules) return modules[1];
  const own = /\/dist\/(.+)$/.exec(url);
  return own ? own[1] : url;
}

function rows(totals: Map<string, number>, busyMs: number, top: number): CostRow[] {
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, selfMs]) => ({ name, selfMs, share: busyMs > 0 ? selfMs / busyMs : 0 }));
}

export interface SummaryOptions {
  top?: number;
  /** Only the last this many ms of the profile (leaves out boot). */
  lastMs?: number;
}

/** Self time per function, and per nearest owning package/file; a sample's time is the delta to the next sample. */
export function summariseProfile(profile: CpuProfile, options: SummaryOptions = {}): ProfileSummary {
  const top = options.top ?? 25;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const owner = (id: number): string => {
    const leaf = nodes.get(id)?.callFrame;
    if (leaf && !leaf.url && leaf.functionName.startsWith('(')) return leaf.functionName; // (garbage collector), (program)
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const found = ownerOf(nodes.get(at)?.callFrame.url ?? '');
      if (found) return found;
    }
    return 'node core (no package on the stack)';
  };
  const from = options.lastMs === undefined ? -Infinity : profile.endTime - options.lastMs * 1000;
  const functions = new Map<string, number>();
  const callers = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const frame = nodes.get(profile.samples[i])?.callFrame;
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    if (!frame || at < from) continue;
    totalMs += ms;
    if (frame.functionName === IDLE) {
      idleMs += ms;
      continue;
    }
    const where = frame.url ? ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    functions.set(name, (functions.get(name) ?? 0) + ms);
    const by = owner(profile.samples[i]);
    callers.set(by, (callers.get(by) ?? 0) + ms);
  }
  const busyMs = totalMs - idleMs;
  return { totalMs, busyMs, functions: rows(functions, busyMs, top), callers: rows(callers, busyMs, top) };
}

export function renderSummary(summary: ProfileSummary): string {
  const table = (title: string, list: CostRow[]): string =>
    [
      `${title}`,
      ...list.map(
        (r) => `  ${r.selfMs.toFixed(0).padStart(7)} ms  ${(r.share * 100).toFixed(1).padStart(5)} %  ${r.name}`,
      ),
    ].join('\n');
  return [
    `profiled ${(summary.totalMs / 1000).toFixed(1)} s, main thread busy ${(summary.busyMs / 1000).toFixed(1)} s (${((summary.busyMs / Math.max(1, summary.totalMs)) * 100).toFixed(0)} %)`,
    table('self time by nearest package / gateway file on the stack (share of busy time):', summary.callers),
    table('top self time by function:', summary.functions),
  ].join('\n\n');
}

/** `node dist/bench/profile-summary.js <file.cpuprofile> [top]` (the whole profile, boot included) */
if (require.main === module) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node dist/bench/profile-summary.js <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(`${renderSummary(summariseProfile(profile, { top: top ? Number(top) : 25 }))}\n`);
}
