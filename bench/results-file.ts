import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * bench/results.md holds one section per benchmark between HTML comment markers; each benchmark
 * rewrites only its own section, so `npm run bench:speech` keeps the chat figures and vice versa.
 */

export const SECTIONS = [
  'chat',
  'chat-ab',
  'speech',
  'speech-ab',
  'event-lock',
  'availability',
  'memory',
  'usage-write',
  'encoding',
  'continuation',
  'realtime',
  'tracing',
  'retry',
  'speech-continuation',
] as const;
export type Section = (typeof SECTIONS)[number];

const HEADER = `# Benchmark results

Written by \`npm run bench\` (the benchmarks of its chain in package.json, in order) and by the ones run on their own (\`bench:encoding\`, \`bench:chat-ab\`, \`bench:speech-ab\`); each benchmark rewrites only its own section. Do not edit by hand. Tables only: the method and the conclusions are in [docs/performance.md](../docs/performance.md).
`;

const start = (name: string): string => `<!-- bench:${name}:start -->`;
const end = (name: string): string => `<!-- bench:${name}:end -->`;

/** The sections currently in `text`, by name (text outside the markers is the header, rewritten each time). */
export function readSections(text: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const match of text.matchAll(/<!-- bench:([a-z-]+):start -->\n([\s\S]*?)\n<!-- bench:\1:end -->/g))
    sections.set(match[1], match[2]);
  return sections;
}

export function mergeSection(previous: string, name: Section, body: string): string {
  const sections = readSections(previous);
  sections.set(name, body.trimEnd());
  const ordered = [
    ...SECTIONS.filter((s) => sections.has(s)),
    ...[...sections.keys()].filter((s) => !(SECTIONS as readonly string[]).includes(s)),
  ];
  return `${HEADER}\n${ordered.map((s) => `${start(s)}\n${sections.get(s)}\n${end(s)}`).join('\n\n')}\n`;
}

/**
 * Replaces (or adds) one benchmark's section of the results file, keeping the others; with BENCH_NO_WRITE=1 every
 * benchmark only prints, whether or not it checks the variable itself.
 */
export function writeSection(file: string, name: Section, body: string): void {
  if (process.env.BENCH_NO_WRITE === '1') return;
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  writeFileSync(file, mergeSection(previous, name, body));
}

/** One figure against its target. */
export interface TargetRow {
  figure: string;
  value: string;
  target: string;
  /** null: reported for information, no target. */
  pass: boolean | null;
}

/** The per-benchmark summary table: figure, measured value, target, pass/miss. */
export function renderTargetTable(rows: TargetRow[]): string {
  const cell = (text: string): string => text.replace(/\|/g, '\\|');
  return [
    '| figure | measured | target | result |',
    '|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.target)} | ${r.pass === null ? 'info' : r.pass ? 'pass' : '**miss**'} |`,
    ),
  ].join('\n');
}

/** What a target-table section says of the run: its date, the machine's cores and CPU, Node's version. */
export function runLines(machine: { cores: number; cpu: string }): string[] {
  return [
    `- Date: ${new Date().toISOString()}`,
    `- Cores (\`nproc\`): ${machine.cores} (${machine.cpu.split(' ').slice(0, 2).join(' ')})`,
    `- Node: ${process.version}`,
  ];
}

/**
 * Prints a benchmark's target table and (unless BENCH_NO_WRITE=1) writes it as its section: the title, which
 * script wrote it, the run's lines, then `notes` (what was measured, how) and the table.
 */
export function reportTargets(
  file: string,
  name: Section,
  heading: { title: string; script: string; machine: { cores: number; cpu: string }; notes: string[] },
  rows: TargetRow[],
): void {
  const table = renderTargetTable(rows);
  process.stdout.write(`${table}\n`);
  writeSection(
    file,
    name,
    [
      `## ${heading.title}`,
      '',
      `Written by \`npm run bench:${name}\` (${heading.script}).`,
      '',
      ...runLines(heading.machine),
      ...heading.notes,
      '',
      table,
    ].join('\n'),
  );
}
