/** A Grafana dashboard's JSON, only the parts the checks read. */
export interface Dashboard {
  title?: unknown;
  uid?: unknown;
  schemaVersion?: unknown;
  panels?: unknown;
  templating?: { list?: Array<Record<string, unknown>> };
}

interface Panel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  description?: unknown;
  datasource?: { type?: unknown; uid?: unknown };
  gridPos?: { h?: unknown; w?: unknown };
  fieldConfig?: { defaults?: { unit?: unknown } };
  targets?: Array<{ refId?: unknown; expr?: unknown }>;
  panels?: Panel[];
}

/** One PromQL expression of the dashboard and who uses it, for the messages. */
export interface DashboardQuery {
  where: string;
  expr: string;
  /** For a `label_values(selector, label)` variable: the label it lists. */
  listsLabel?: string;
}

/** What a /metrics text declares: each family's type, and the label names and values of each series name. */
export interface Exposition {
  types: Map<string, string>;
  series: Map<string, Map<string, Set<string>>>;
}

/** Labels Prometheus adds to every series it scrapes: a query may use them though /metrics does not show them. */
const TARGET_LABELS = new Set(['job', 'instance']);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['bool', 'offset', 'and', 'or', 'unless', 'atan2', 'inf', 'nan']);
/** The series names a histogram or summary family exposes besides its own name. */
const SUFFIXES: Array<[string, string[]]> = [
  ['_bucket', ['histogram']],
  ['_sum', ['histogram', 'summary']],
  ['_count', ['histogram', 'summary']],
];
const DATASOURCE_UID = '${datasource}';

/** Every panel of the dashboard, the panels of collapsed rows included. */
export function allPanels(dashboard: Dashboard): Panel[] {
  const out: Panel[] = [];
  const walk = (panels: unknown): void => {
    if (!Array.isArray(panels)) return;
    for (const panel of panels as Panel[]) {
      out.push(panel);
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** The dashboard's PromQL: every panel target's `expr` and every query variable's query. */
export function dashboardQueries(dashboard: Dashboard): DashboardQuery[] {
  const queries: DashboardQuery[] = [];
  for (const panel of allPanels(dashboard)) {
    for (const target of panel.targets ?? []) {
      if (typeof target.expr === 'string')
        queries.push({ where: `panel "${String(panel.title)}" (${String(target.refId)})`, expr: target.expr });
    }
  }
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type !== 'query') continue;
    const query = (variable.query as { query?: unknown } | undefined)?.query ?? variable.query;
    if (typeof query !== 'string') continue;
    const listing = /^\s*label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/.exec(query);
    queries.push({
      where: `variable "${String(variable.name)}"`,
      expr: listing ? listing[1] : query,
      listsLabel: listing?.[2],
    });
  }
  return queries;
}

/** Parses the Prometheus text format: `# TYPE` lines and the label names and values of every sample. */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const series = new Map<string, Map<string, Set<string>>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (line.startsWith('#') || line.trim() === '') continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!sample) continue;
    let labels = series.get(sample[1]);
    if (!labels) {
      labels = new Map();
      series.set(sample[1], labels);
    }
    for (const pair of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      const values = labels.get(pair[1]) ?? new Set<string>();
      values.add(pair[2]);
      labels.set(pair[1], values);
    }
  }
  return { types, series };
}

/** The family a series name belongs to: itself, or a histogram's `_bucket`/`_sum`/`_count`, a summary's `_sum`/`_count`. */
export function familyOf(name: string, exposition: Exposition): string | undefined {
  if (exposition.types.has(name)) return name;
  for (const [suffix, kinds] of SUFFIXES) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    if (kinds.includes(exposition.types.get(base) ?? '')) return base;
  }
  return undefined;
}

interface Token {
  kind: 'ident' | 'string' | 'number' | 'var' | 'punct' | 'op';
  text: string;
}

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const rest = expr.slice(i);
    const space = /^\s+/.exec(rest);
    const comment = /^#.*/.exec(rest);
    if (space || comment) {
      i += (space ?? comment)![0].length;
      continue;
    }
    if (rest[0] === '[') {
      // a range or subquery duration, `[5m]` or `[$__rate_interval]`: no metric or label in it
      const end = expr.indexOf(']', i);
      i = end < 0 ? expr.length : end + 1;
      continue;
    }
    const quoted = /^("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)/.exec(rest);
    const ident = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(rest);
    const number = /^[0-9.][0-9a-zA-Z.]*/.exec(rest);
    const variable = /^\$(\{[^}]*\}|[a-zA-Z0-9_]+)/.exec(rest);
    const op = /^(=~|!~|!=|==|<=|>=|[=<>+\-*/%^])/.exec(rest);
    const [kind, match] = quoted
      ? (['string', quoted[0]] as const)
      : ident
        ? (['ident', ident[0]] as const)
        : number
          ? (['number', number[0]] as const)
          : variable
            ? (['var', variable[0]] as const)
            : op
              ? (['op', op[0]] as const)
              : (['punct', rest[0]] as const);
    tokens.push({ kind, text: kind === 'string' ? match.slice(1, -1) : match });
    i += match.length;
  }
  return tokens;
}

/** One metric selector of an expression: its name, its matchers and where it stands among the tokens. */
interface Selector {
  name: string;
  at: number;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** One `by (...)`, `without (...)`, `on (...)`, `ignoring (...)`: its labels and the token range they apply to. */
interface Grouping {
  keyword: string;
  labels: string[];
  from: number;
  to: number;
}

/** The selectors and groupings of one PromQL expression (a lexical reading, enough for a dashboard's queries). */
export function readPromql(expr: string): { selectors: Selector[]; groupings: Grouping[]; problems: string[] } {
  const tokens = tokenize(expr);
  const match = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((token, i) => {
    if (token.text === '(' && token.kind === 'punct') open.push(i);
    if (token.text === ')' && token.kind === 'punct') {
      const start = open.pop();
      if (start !== undefined) {
        match.set(start, i);
        match.set(i, start);
      }
    }
  });
  const selectors: Selector[] = [];
  const groupings: Grouping[] = [];
  const problems: string[] = [];
  if (open.length > 0) problems.push('has an unclosed parenthesis');
  const labelList = (start: number): { labels: string[]; end: number } => {
    const end = match.get(start) ?? tokens.length - 1;
    const labels = tokens
      .slice(start + 1, end)
      .filter((t) => t.kind === 'ident')
      .map((t) => t.text);
    return { labels, end };
  };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    const next = tokens[i + 1];
    if (token.kind === 'punct' && token.text === '{' && tokens[i - 1]?.kind !== 'ident')
      problems.push('has a selector without a metric name');
    if (token.kind !== 'ident') continue;
    if (GROUPING.has(token.text)) {
      if (next?.text !== '(') continue;
      const { labels, end } = labelList(i + 1);
      let from = 0;
      let to = tokens.length - 1;
      if (token.text === 'by' || token.text === 'without') {
        // `sum by (x) (...)` applies to the group after the labels, `sum (...) by (x)` to the group before
        const before = tokens[i - 1];
        if (before?.kind === 'punct' && before.text === ')') {
          from = match.get(i - 1) ?? 0;
          to = i - 1;
        } else if (tokens[end + 1]?.text === '(') {
          from = end + 1;
          to = match.get(end + 1) ?? to;
        }
      }
      groupings.push({ keyword: token.text, labels, from, to });
      i = end;
      continue;
    }
    // a function or an aggregation (`sum (...)`, `sum by (x) (...)`), not a metric
    if (KEYWORDS.has(token.text.toLowerCase()) || next?.text === '(' || next?.text === 'by' || next?.text === 'without')
      continue;
    const selector: Selector = { name: token.text, at: i, matchers: [] };
    if (next?.text === '{') {
      let j = i + 2;
      while (j < tokens.length && tokens[j].text !== '}') {
        const [label, op, value] = [tokens[j], tokens[j + 1], tokens[j + 2]];
        if (label?.kind === 'ident' && op?.kind === 'op' && value?.kind === 'string') {
          selector.matchers.push({ label: label.text, op: op.text, value: value.text });
          j += 3;
        } else j += 1;
      }
      i = j;
    }
    selectors.push(selector);
  }
  return { selectors, groupings, problems };
}

/** What is wrong with one query against a running service's /metrics: unknown metrics, labels and label values. */
export function queryProblems(query: DashboardQuery, exposition: Exposition): string[] {
  const { selectors, groupings, problems } = readPromql(query.expr);
  const out = problems.map((p) => `${query.where}: ${p}`);
  if (selectors.length === 0) out.push(`${query.where}: uses no metric`);
  const labelsOf = (name: string): Map<string, Set<string>> =>
    exposition.series.get(name) ?? new Map<string, Set<string>>();
  const describe = (name: string): string => {
    const labels = [...labelsOf(name).keys()];
    return labels.length > 0 ? `its series carry ${labels.join(', ')}` : 'its series carry no label';
  };
  const needLabel = (selector: Selector, label: string, how: string): void => {
    if (TARGET_LABELS.has(label) || label === '__name__' || labelsOf(selector.name).has(label)) return;
    out.push(`${query.where}: label "${label}" (${how}) is not on ${selector.name} (${describe(selector.name)})`);
  };
  const known = selectors.filter((selector) => {
    if (familyOf(selector.name, exposition)) return true;
    out.push(`${query.where}: metric ${selector.name} is not in /metrics (no such # TYPE family)`);
    return false;
  });
  for (const selector of known) {
    for (const { label, op, value } of selector.matchers) {
      needLabel(selector, label, `in {${label}${op}"${value}"}`);
      const values = labelsOf(selector.name).get(label);
      if (op === '=' && values && !value.includes('$') && !values.has(value))
        out.push(
          `${query.where}: no series of ${selector.name} has ${label}="${value}" (values: ${[...values].join(', ')})`,
        );
    }
    if (query.listsLabel) needLabel(selector, query.listsLabel, 'listed by label_values');
  }
  for (const grouping of groupings) {
    const inScope = known.filter((s) => s.at > grouping.from && s.at < grouping.to);
    for (const label of grouping.labels)
      for (const selector of inScope) needLabel(selector, label, `in ${grouping.keyword} (...)`);
  }
  return out;
}

/** Every query of the dashboard checked against a /metrics text; empty when every metric and label exists. */
export function dashboardMetricProblems(dashboard: Dashboard, metricsText: string): string[] {
  const exposition = parseExposition(metricsText);
  return dashboardQueries(dashboard).flatMap((query) => queryProblems(query, exposition));
}

/** What makes the JSON no importable dashboard: missing title or uid, panels without id, title, unit or query, repeated ids. */
export function dashboardShapeProblems(dashboard: Dashboard): string[] {
  const out: string[] = [];
  if (typeof dashboard.title !== 'string' || dashboard.title === '') out.push('the dashboard has no title');
  if (typeof dashboard.uid !== 'string' || !/^[a-zA-Z0-9_-]{1,40}$/.test(dashboard.uid))
    out.push('the dashboard has no valid uid');
  if (typeof dashboard.schemaVersion !== 'number' || dashboard.schemaVersion < 36)
    out.push('the dashboard has no schemaVersion of 36 or later');
  if (!Array.isArray(dashboard.panels) || dashboard.panels.length === 0) out.push('the dashboard has no panels');
  const variables = dashboard.templating?.list ?? [];
  if (!variables.some((v) => v.type === 'datasource' && v.name === 'datasource' && v.query === 'prometheus'))
    out.push('the dashboard has no "datasource" variable of type datasource over prometheus');
  const ids = new Set<unknown>();
  for (const panel of allPanels(dashboard)) {
    const name = `panel ${JSON.stringify(panel.title ?? panel.id)}`;
    if (!Number.isInteger(panel.id)) out.push(`${name} has no integer id`);
    else if (ids.has(panel.id)) out.push(`${name} repeats id ${String(panel.id)}`);
    ids.add(panel.id);
    if (typeof panel.title !== 'string' || panel.title === '') out.push(`${name} has no title`);
    if (typeof panel.gridPos?.w !== 'number' || typeof panel.gridPos?.h !== 'number')
      out.push(`${name} has no gridPos`);
    if (panel.type === 'row') continue;
    if (typeof panel.type !== 'string') out.push(`${name} has no type`);
    if (typeof panel.description !== 'string' || panel.description === '') out.push(`${name} has no description`);
    if (typeof panel.fieldConfig?.defaults?.unit !== 'string') out.push(`${name} has no unit`);
    if (panel.datasource?.uid !== DATASOURCE_UID) out.push(`${name} does not query the ${DATASOURCE_UID} data source`);
    const targets = panel.targets ?? [];
    if (targets.length === 0) out.push(`${name} has no query`);
    const refIds = new Set<unknown>();
    for (const target of targets) {
      if (typeof target.expr !== 'string' || target.expr.trim() === '') out.push(`${name} has a target without expr`);
      if (refIds.has(target.refId)) out.push(`${name} repeats refId ${String(target.refId)}`);
      refIds.add(target.refId);
    }
  }
  return out;
}
