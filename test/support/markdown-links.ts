import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** One link (or mention) in a Markdown file that a clone of the repository cannot follow. */
export interface LinkProblem {
  file: string;
  line: number;
  target: string;
  problem: string;
}

/** The Markdown a reader of the repository follows: README.md and every page under docs/. */
export function documentationFiles(root: string): string[] {
  const pages: string[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) pages.push(path);
    }
  };
  walk(join(root, 'docs'));
  return [join(root, 'README.md'), ...pages];
}

/** Lines outside fenced code blocks, with their 1-based numbers (a link in a code sample is no link). */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const lines: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  text.split('\n').forEach((raw, index) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (opening) {
      if (fence === null) fence = opening[1][0];
      else if (opening[1][0] === fence) fence = null;
      return;
    }
    if (fence === null) lines.push({ line: index + 1, text: raw });
  });
  return lines;
}

/** GitHub's anchor of a heading: its text without markup, lower case, punctuation other than - and _ dropped, spaces to -. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a page offers: its headings (repeats numbered -1, -2 as GitHub does) and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(text);
    if (heading) {
      const slug = githubSlug(heading[1]);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const id of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]);
  }
  return anchors;
}

/** Link targets on one line: inline links and images, reference definitions, HTML href and src. */
function targetsOf(text: string): string[] {
  const withoutCode = text.replace(/`[^`]*`/g, '');
  const targets: string[] = [];
  for (const m of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]);
  const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(withoutCode);
  if (definition) targets.push(definition[1]);
  for (const m of withoutCode.matchAll(/\b(?:href|src)="([^"]+)"/g)) targets.push(m[1]);
  return targets;
}

/** The project's shared folder sits beside the repository, not in it: naming it sends a reader nowhere. */
const SHARED_FOLDER = /(^|[^\w.-])(\.\.\/)+shared\b|(^|[^\w-])shared\/spec\b/;

/** `decisions §8`, `interface §4.2`: sections of the contract files that live in the shared folder. */
const CONTRACT_SECTION = /\b(interface|decisions)(\.md)? §\s?\d/i;

/**
 * Every link of `files` that leaves the repository (a path that climbs out of `root`, or into the
 * shared folder), points at a file that does not exist, or at a heading that is not there.
 */
export function linkProblems(root: string, files: string[]): LinkProblem[] {
  const problems: LinkProblem[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    let anchors = anchorCache.get(path);
    if (!anchors) {
      anchors = anchorsOf(readFileSync(path, 'utf8'));
      anchorCache.set(path, anchors);
    }
    return anchors;
  };
  for (const file of files) {
    const shown = relative(root, file);
    for (const { line, text } of proseLines(readFileSync(file, 'utf8'))) {
      const report = (target: string, problem: string): void =>
        void problems.push({ file: shown, line, target, problem });
      if (SHARED_FOLDER.test(text))
        report(text.trim(), 'names the shared folder, which a clone of the repository does not have');
      if (CONTRACT_SECTION.test(text))
        report(text.trim(), 'cites a section of the contract files, which a clone of the repository does not have');
      for (const target of targetsOf(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
        const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
        const path = decodeURIComponent(pathPart);
        if (isAbsolute(path)) {
          report(target, 'is an absolute path: link relative to the page');
          continue;
        }
        const resolved = path === '' ? file : resolve(dirname(file), path);
        const inRepo = relative(root, resolved);
        if (inRepo === '..' || inRepo.startsWith(`..${sep}`) || isAbsolute(inRepo)) {
          report(target, 'leaves the repository');
          continue;
        }
        if (inRepo.split(sep).includes('shared')) {
          report(target, 'points into a shared/ folder');
          continue;
        }
        if (!existsSync(resolved)) {
          report(target, 'points at a file that does not exist');
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchorsIn(resolved).has(anchor)) {
          report(target, `has no heading #${anchor} in ${relative(root, resolved)}`);
        }
      }
    }
  }
  return problems;
}
