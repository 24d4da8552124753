/** What stands in for a credential in a logged URL. */
export const REDACTED = '[redacted]';

/** Query parameters that carry a credential (the speech WebSocket's `?api_key=` and `?ticket=`). */
const CREDENTIAL_PARAMS = new Set(['api_key', 'ticket']);

/** A query parameter's name as a server's query parser reads it (`+` is a space, %XX decoded); undefined when it cannot be decoded. */
function decodedName(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * A URL fit for a log line: the value of every query parameter whose name, decoded as the server
 * decodes it, names a credential is replaced, whatever its spelling (`api%5Fkey`, `%61pi_key`, `API_KEY`).
 * A name that cannot be decoded is redacted too when it looks like one.
 */
export function scrubUrl(url: string | undefined): string | undefined {
  if (url === undefined) return url;
  const start = url.indexOf('?');
  if (start < 0) return url;
  const query = url.slice(start + 1);
  const pairs = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const name = decodedName(rawName)?.trim().toLowerCase();
    const credential = name === undefined ? /key|ticket|token/i.test(rawName) : CREDENTIAL_PARAMS.has(name);
    return credential ? `${rawName}=${REDACTED}` : pair;
  });
  return `${url.slice(0, start)}?${pairs.join('&')}`;
}

/** The path of a request target without its query string: for messages a client reads back. */
export function pathOnly(url: string): string {
  const start = url.search(/[?#]/);
  return start < 0 ? url : url.slice(0, start);
}
