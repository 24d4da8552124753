#!/usr/bin/env node
// A webhook receiver for the failover demo: verifies X-SVC-Signature and prints each event.
//   WEBHOOK_SECRET=whsec_… node scripts/demo/webhook-receiver.mjs [--port 4020]
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const TOLERANCE_SECONDS = 5 * 60;

/** Whether `signature` is `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the whole whsec_ secret. */
export function verifySignature(secret, rawBody, timestamp, signature) {
  if (!secret || !/^\d+$/.test(timestamp ?? '')) return false;
  // a stale timestamp is a replay: refuse it even when the signature matches
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
  const given = Buffer.from(String(signature ?? '').replace(/^sha256=/, ''), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** One line a person reads for an event. */
export function describeEvent(event) {
  const d = event.data ?? {};
  const fields =
    event.event === 'provider_recovered'
      ? `provider ${d.active_provider} is healthy again (model ${d.model}, request_id=${d.request_id})`
      : `${d.exhausted_provider} failed, served by ${d.active_provider} at level ${d.fallback_level}` +
        (d.coalesced_count ? ` (closing event: ${d.coalesced_count} more in ${d.window_secs} s)` : '') +
        ` request_id=${d.request_id}`;
  return `${event.event} ${event.id}: ${fields}`;
}

/** Starts the receiver on 127.0.0.1; the secret may be set later (it is known once the endpoint is created). */
export async function startWebhookReceiver({ port = 4020, secret, log = console.log } = {}) {
  const state = { secret, verified: [], rejected: 0 };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!verifySignature(state.secret, raw, req.headers['x-svc-timestamp'], req.headers['x-svc-signature'])) {
        state.rejected += 1;
        log(`receiver  | REJECTED a delivery: invalid signature (answered 400)`);
        res.writeHead(400).end('invalid signature');
        return;
      }
      const event = JSON.parse(raw.toString('utf8'));
      state.verified.push(event);
      log(`receiver  | signature verified ✓ ${describeEvent(event)}`);
      res.writeHead(204).end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/webhook`,
    /** Events whose signature verified, in arrival order. */
    verified: state.verified,
    get rejected() {
      return state.rejected;
    },
    setSecret(value) {
      state.secret = value;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '4020' } } });
  if (!process.env.WEBHOOK_SECRET?.startsWith('whsec_')) {
    console.error('set WEBHOOK_SECRET to the endpoint secret (whsec_…) that creating the webhook returned');
    process.exit(2);
  }
  const receiver = await startWebhookReceiver({ port: Number(values.port), secret: process.env.WEBHOOK_SECRET });
  console.log(`receiver  | listening at ${receiver.url}; each verified event is printed here`);
}
