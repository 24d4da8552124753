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
});
