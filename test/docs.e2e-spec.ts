import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ERROR_CODES } from '../src/common/errors/error-codes';
import { KIND_TRAITS, PROVIDER_KINDS } from '../src/config/provider-kinds';
import { documentationFiles, linkProblems } from './support/markdown-links';

const root = join(__dirname, '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

function apiDocs(...args: string[]): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, ['scripts/api-docs.mjs', ...args], { cwd: root, encoding: 'utf8' });
  return { status: run.status, stderr: run.stderr };
}

describe('docs/api.md, generated from openapi/openapi.json', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'svc-docs-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('is what `npm run docs` writes from the committed document', () => {
    expect(apiDocs('--check')).toEqual({ status: 0, stderr: '' });
  });

  it('is reported stale when an operation is added to the document and the page is not regenerated', () => {
    const spec = JSON.parse(read('openapi/openapi.json')) as { paths: Record<string, unknown> };
    spec.paths['/v1/added'] = {
      get: { operationId: 'Added_get', summary: 'A route added later.', responses: { '200': { description: 'ok' } } },
    };
    const changed = join(scratch, 'openapi.json');
    writeFileSync(changed, JSON.stringify(spec));
    const run = apiDocs('--check', '--openapi', changed, '--out', join(root, 'docs/api.md'));
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/docs\/api\.md is stale .*npm run docs/);
  });

  it('is reported stale when the page was edited by hand', () => {
    const edited = join(scratch, 'api.md');
    writeFileSync(edited, `${read('docs/api.md')}\nA hand-written line.\n`);
    expect(apiDocs('--check', '--out', edited).status).toBe(1);
  });

  it('has a section for every operation of the document, and links the WebSocket page', () => {
    const spec = JSON.parse(read('openapi/openapi.json')) as { paths: Record<string, Record<string, unknown>> };
    const page = read('docs/api.md');
    const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `### ${method.toUpperCase()} ${path}`),
    );
    expect(operations.length).toBeGreaterThan(30);
    for (const heading of operations) expect(page).toContain(`\n${heading}\n`);
    expect(page).toContain('](websocket.md)');
  });
});

describe('links of README.md and docs/', () => {
  it('stay inside the repository and reach files and headings that exist', () => {
    const files = documentationFiles(root);
    expect(files.map((file) => file.slice(root.length + 1))).toEqual(
      expect.arrayContaining(['README.md', 'docs/README.md', 'docs/api.md']),
    );
    expect(linkProblems(root, files)).toEqual([]);
  });

  it('catch a link out of the repository, into shared/, to a missing file or heading, and a mention of the shared folder or of a contract section', () => {
    const repo = mkdtempSync(join(tmpdir(), 'svc-links-'));
    try {
      mkdirSync(join(repo, 'docs'));
      writeFileSync(join(repo, 'docs/page.md'), '# Page\n\n## A heading\n');
      writeFileSync(
        join(repo, 'README.md'),
        [
          '# Readme',
          'Fine: [page](docs/page.md), [heading](docs/page.md#a-heading), [here](#readme), [web](https://example.com/x).',
          'Out: [spec](../shared/spec/interface.md) and [up](docs/../../elsewhere.md).',
          'Missing: [gone](docs/missing.md) and [no heading](docs/page.md#nothing-here) and [local](#nowhere).',
          'Shared: [in](docs/shared/x.md). The contract is `../shared/spec/decisions.md`.',
          'As decisions §8 says.',
          '```',
          '[in a code block](../not-a-link.md)',
          '```',
          '[ref]: ../outside.md',
        ].join('\n'),
      );
      const problems = linkProblems(repo, documentationFiles(repo));
      expect(problems.map((p) => [p.line, p.target, p.problem])).toEqual([
        [3, expect.any(String), expect.stringMatching(/shared folder/)],
        [3, '../shared/spec/interface.md', 'leaves the repository'],
        [3, 'docs/../../elsewhere.md', 'leaves the repository'],
        [4, 'docs/missing.md', 'points at a file that does not exist'],
        [4, 'docs/page.md#nothing-here', 'has no heading #nothing-here in docs/page.md'],
        [4, '#nowhere', 'has no heading #nowhere in README.md'],
        [5, expect.any(String), expect.stringMatching(/shared folder/)],
        [5, 'docs/shared/x.md', 'points into a shared/ folder'],
        [6, expect.any(String), expect.stringMatching(/cites a section of the contract/)],
        [10, '../outside.md', 'leaves the repository'],
      ]);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('README.md links the docs index, and the index links every page of docs/', () => {
    expect(read('README.md')).toContain('](docs/README.md)');
    const index = read('docs/README.md');
    const pages = documentationFiles(root)
      .filter((file) => file.includes(`${join(root, 'docs')}`) && basename(file) !== 'README.md')
      .map((file) => basename(file));
    expect(pages).toEqual(
      expect.arrayContaining(['api.md', 'websocket.md', 'decisions.md', 'providers.md', 'request-flow.md']),
    );
    for (const page of pages) expect(index).toContain(`](${page})`);
  });
});

/** Every .ts file under `dir` (relative to the root). */
function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

describe('hand-written pages keep up with the code', () => {
  it('docs/decisions.md holds every section the code cites (decisions §N), and the code cites no other contract', () => {
    const sections = new Set([...read('docs/decisions.md').matchAll(/^## (\d+)\. /gm)].map((m) => Number(m[1])));
    expect([...sections]).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const cited = new Map<number, string>();
    const elsewhere: string[] = [];
    for (const file of [...sourcesUnder('src'), ...sourcesUnder('test'), ...sourcesUnder('bench')]) {
      const text = read(file);
      for (const m of text.matchAll(/\bdecisions(?:\.md)? §(\d+)/g)) cited.set(Number(m[1]), file);
      // the interface document is not in the repository: a citation of it sends the reader nowhere
      if (/\binterface(?:\.md)? §\d/.test(text) && !file.endsWith('markdown-links.ts')) elsewhere.push(file);
    }
    expect(cited.size).toBeGreaterThan(5);
    expect([...cited].filter(([n]) => !sections.has(n))).toEqual([]);
    expect(elsewhere).toEqual([]);
  });

  it('docs/decisions.md lists every error code with its status and type', () => {
    const page = read('docs/decisions.md');
    for (const [code, { status, type }] of Object.entries(ERROR_CODES))
      expect(page).toContain(`| \`${code}\` | ${status} | \`${type}\` |`);
  });

  it('docs/providers.md describes every provider kind with its default base_url', () => {
    const page = read('docs/providers.md');
    for (const kind of PROVIDER_KINDS) {
      expect(page).toContain(`\n### \`${kind}\``);
      const base = KIND_TRAITS[kind].defaultBaseUrl;
      if (base) expect(page).toContain(base);
    }
  });

  it('docs/websocket.md shows every message of the stream', () => {
    const page = read('docs/websocket.md');
    for (const event of [
      'connected_success',
      'task_start',
      'task_started',
      'task_continue',
      'task_continued',
      'task_finish',
      'task_finished',
      'task_failed',
    ]) {
      expect(page).toContain(`{"event":"${event}"`);
    }
  });
});
