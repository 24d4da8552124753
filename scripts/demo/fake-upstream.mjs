#!/usr/bin/env node
// An OpenAI-compatible upstream for the failover demo, told to fail and recover over HTTP (no stdin):
//   node scripts/demo/fake-upstream.mjs [--port 4010] [--fail]
//   curl -s -X POST localhost:4010/control/fail      # chat and GET /v1/models answer 503 from now on
//   curl -s -X POST localhost:4010/control/recover   # they answer 200 again
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Starts the fake on 127.0.0.1; `log` gets one line per request. */
export async function startFakeUpstream({ port = 4010, failing = false, log = console.log } = {}) {
  const state = { failing, chatRequests: 0 };
  const send = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const unavailable = (res) =>
    send(res, 503, {
      error: { message: 'the demo upstream was told to fail', type: 'server_error', param: null, code: 'demo_failing' },
    });

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://upstream').pathname;
      const route = `${req.method} ${path}`;
      if (route === 'POST /control/fail' || route === 'POST /control/recover') {
        state.failing = route === 'POST /control/fail';
        log(`upstream  | told to ${state.failing ? 'FAIL (503 from now on)' : 'RECOVER (200 from now on)'}`);
        return send(res, 200, { failing: state.failing, chat_requests: state.chatRequests });
      }
      if (route === 'GET /control')
        return send(res, 200, { failing: state.failing, chat_requests: state.chatRequests });
      if (route === 'GET /v1/models') {
        log(`upstream  | GET /v1/models (the gateway's cheap probe) → ${state.failing ? 503 : 200}`);
        if (state.failing) return unavailable(res);
        return send(res, 200, {
          object: 'list',
          data: [{ id: 'gpt-5.4-mini', object: 'model', created: 0, owned_by: 'demo' }],
        });
      }
      if (route === 'POST /v1/chat/completions') {
        state.chatRequests += 1;
        log(`upstream  | POST /v1/chat/completions → ${state.failing ? 503 : 200}`);
        if (state.failing) return unavailable(res);
        return chat(res, chunks);
      }
      send(res, 404, {
        error: { message: `no route ${route}`, type: 'invalid_request_error', param: null, code: null },
      });
    });
  });

  const chat = (res, chunks) => {
    let request = {};
    try {
      request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, {
        error: { message: 'body is not JSON', type: 'invalid_request_error', param: null, code: null },
      });
    }
    const model = typeof request.model === 'string' ? request.model : 'gpt-5.4-mini';
    const text = 'Hello from the flaky upstream (the primary).';
    const id = `chatcmpl-demo-${Date.now()}`;
    const created = Math.floor(Date.now() / 1000);
    if (request.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta, finish) => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: text }, null))}\n\n`);
      res.write(`data: ${JSON.stringify(chunk({}, 'stop'))}\n\n`);
      return res.end('data: [DONE]\n\n');
    }
    send(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
    });
  };

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    get chatRequests() {
      return state.chatRequests;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: { port: { type: 'string', default: '4010' }, fail: { type: 'boolean', default: false } },
  });
  const upstream = await startFakeUpstream({ port: Number(values.port), failing: values.fail });
  console.log(`upstream  | OpenAI-compatible fake at ${upstream.url}/v1 (${values.fail ? 'failing' : 'healthy'})`);
  console.log(`upstream  | make it fail:    curl -s -X POST ${upstream.url}/control/fail`);
  console.log(`upstream  | make it recover: curl -s -X POST ${upstream.url}/control/recover`);
}
