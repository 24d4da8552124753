/** The routes whose every answer names who served it (decisions §4). */
const PROXIED_PATHS: ReadonlySet<string> = new Set(['/v1/chat/completions', '/v1/audio/speech']);

/** What an answer no provider served says: none served, at the entry level (an exhausted chain says the level it reached). */
export const UNSERVED_HEADERS: Readonly<Record<string, string>> = {
  'x-svc-provider-used': 'none',
  'x-svc-is-fallback': 'false',
  'x-svc-fallback-level': '0',
  'x-svc-attempts': '0',
};

export const isProxiedPath = (url: string): boolean => {
  const query = url.indexOf('?');
  return PROXIED_PATHS.has(query < 0 ? url : url.slice(0, query));
};
