import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The shipped reverse-proxy configuration keeps credentials out of its logs and slow clients off the replicas. */
describe('config/nginx.conf', () => {
  const conf = readFileSync(join(__dirname, '..', 'config', 'nginx.conf'), 'utf8');
  const directives = conf.replace(/#.*$/gm, '');

  it('logs with a format that holds no query string', () => {
    const format = /log_format\s+gateway\s+((?:'[^']*'\s*)+);/.exec(directives);
    expect(format).not.toBeNull();
    expect(format![1]).toContain('$uri');
    // $request, $request_uri, $args and $query_string all carry the query (and so ?api_key=)
    expect(format![1]).not.toMatch(/\$request\b|\$request_uri|\$args|\$query_string|\$arg_/);
    expect(directives).toMatch(/access_log\s+\S+\s+gateway\s*;/);
    expect(directives).not.toMatch(/access_log\s+\S+\s*;/); // no log in the default (combined) format
  });

  it('buffers request bodies, times out slow clients and caps connections per client', () => {
    expect(directives).toMatch(/proxy_request_buffering\s+on\s*;/);
    expect(directives).toMatch(/client_body_timeout\s+\d+s\s*;/);
    expect(directives).toMatch(/client_header_timeout\s+\d+s\s*;/);
    expect(directives).toMatch(/limit_conn\s+per_client\s+\d+\s*;/);
  });

  describe('refuses a key in the query string before a replica (or the error log) sees it', () => {
    // the map's case-insensitive PCRE, read as a JavaScript RegExp (the same syntax for this pattern)
    const map = /map\s+\$args\s+\$api_key_in_query\s*\{([^}]*)\}/.exec(directives);
    const pattern = map ? /"~\*([^"]+)"\s+1\s*;/.exec(map[1]) : null;
    const refused = (query: string): boolean => new RegExp(pattern![1], 'i').test(query);
    const secret = 'sk-svc-0123456789abcdef0123456789abcdef';

    it('matches every spelling of api_key that the gateway decodes as one, wherever it stands in the query', () => {
      expect(pattern).not.toBeNull();
      for (const name of ['api_key', 'api%5Fkey', 'api%5fkey', '%61pi_key', '%61%70%69%5F%6B%65%79', 'API_KEY']) {
        for (const query of [`${name}=${secret}`, `model=x&${name}=${secret}`, `${name}=${secret}&b=2`]) {
          expect([query, refused(query)]).toEqual([query, true]);
        }
        // what the WebSocket upgrade reads (WHATWG URL): each lower-case spelling is the key there
        if (name !== 'API_KEY') expect(new URLSearchParams(`${name}=${secret}`).get('api_key')).toBe(secret);
      }
    });

    it('lets other parameters through, tickets and look-alike names included', () => {
      for (const query of ['', 'ticket=wst_abc', 'limit=10&after=vc_1', 'not_api_key=1', 'api_keys=1', 'xapi_key=1']) {
        expect([query, refused(query)]).toEqual([query, false]);
      }
    });

    it('answers 401 missing_api_key in the error shape, from nginx, dropping the query', () => {
      const guard = /if\s*\(\s*\$api_key_in_query\s*\)\s*\{\s*rewrite\s+\^\s+(\S+)\?\s+last\s*;\s*\}/.exec(directives);
      expect(guard).not.toBeNull();
      // the block up to its closing brace on a line of its own (the JSON body holds braces)
      const location = new RegExp(
        `location\\s*=\\s*${guard![1].replace(/[.]/g, '\\.')}\\s*\\{([\\s\\S]*?)\\n\\s*\\}`,
      ).exec(directives);
      expect(location).not.toBeNull();
      expect(location![1]).toMatch(/\binternal\s*;/);
      expect(location![1]).toMatch(/default_type\s+application\/json\s*;/);
      const answer = /return\s+401\s+'([^']*)'\s*;/.exec(location![1]);
      expect(answer).not.toBeNull();
      const body = JSON.parse(answer![1].replace(/\\n$/, '')) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ type: 'authentication_error', code: 'missing_api_key', param: null });
      expect(body.error.message).toMatch(/Authorization: Bearer/);
      // no proxy_pass may answer before the refusal: it sits at server level, outside every location
      expect(directives.indexOf(guard![0])).toBeLessThan(directives.indexOf('location / {'));
    });
  });
});
