import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenOnLoopback, readBody } from './bare-proxy';
import { bootGateway, CHAT_BODY, CHAT_PATH, MODES, tripPrimary } from './chat-modes';
import { runLoad } from './load';
import { log, Run, secondsFromEnv } from './run';
import type { UpstreamUrls } from './upstream';

/**
 * Webhook deliveries to one subscriber while the primary's circuit is open and the gateway is at full
 * load (c=20) for one coalescing window (`BENCH_WEBHOOK_SECONDS`, default 30 s; it is also the
 * gateway's SVC_FAILOVER_EVENT_WINDOW). Expected with coalescing (decisions §8): one delivery per key
 * per replica for the window's first failover, then one closing event carrying `coalesced_count`.
 */

export const WEBHOOK_SECONDS = secondsFromEnv('BENCH_WEBHOOK_SECONDS', 30);
/** After the load, how long to wait for the closing event (its window end, plus the delivery worker's poll). */
const CLOSING_GRACE_MS = 15000;

export interface WebhookStorm {
  seconds: number;
  /** Requests served while the circuit was open. */
  served: number;
  /** Deliveries received from the start of the trip to the end of the load. */
  duringLoad: number;
  /** Deliveries received in all, the closing event's included. */
  total: number;
  /** The closing event's coalesced_count, when it came. */
  coalescedCount: number | null;
  replicas: number;
}

interface Delivery {
  at: number;
  event: string;
  coalesced?: number;
}

export async function webhookStorm(run: Run, urls: UpstreamUrls): Promise<WebhookStorm> {
  log(`webhook deliveries during a ${WEBHOOK_SECONDS} s open circuit at c=20`);
  const deliveries: Delivery[] = [];
  const receiver = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const body = JSON.parse(raw.toString('utf8') || '{}') as { event?: string; data?: { coalesced_count?: number } };
      deliveries.push({ at: performance.now(), event: body.event ?? '?', coalesced: body.data?.coalesced_count });
      res.writeHead(200).end('ok');
    });
  });
  const receiverUrl = await listenOnLoopback(receiver);
  try {
    const booted = await bootGateway(run, urls, 'circuit-open', {
      label: 'circuit-open-webhooks',
      trip: false,
      env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true', SVC_FAILOVER_EVENT_WINDOW: String(WEBHOOK_SECONDS) },
    });
    const headers = { authorization: `Bearer ${booted.secret}` };
    const created = await fetch(`${booted.gateway.url}/v1/user/webhooks`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiverUrl}/hook`, events: ['failover'] }),
    });
    if (created.status !== 201) throw new Error(`webhook creation failed: ${created.status} ${await created.text()}`);
    // the trip's own failovers open the window: everything after is the same condition
    await tripPrimary(booted.gateway.url, booted.secret);
    const started = performance.now();
    // the load ends inside the window the trip opened (autocannon overshoots a little; a later request would open the next window)
    const left = WEBHOOK_SECONDS - Math.max(1, WEBHOOK_SECONDS * 0.1);
    const result = await runLoad({
      url: `${booted.gateway.url}${CHAT_PATH}`,
      headers,
      body: CHAT_BODY,
      connections: 20,
      seconds: Math.max(1, left),
      expectProvider: MODES['circuit-open'].servedBy,
    });
    const loadEnd = performance.now();
    const duringLoad = deliveries.filter((d) => d.at <= loadEnd).length;
    const deadline = started + WEBHOOK_SECONDS * 1000 + CLOSING_GRACE_MS;
    while (performance.now() < deadline && !deliveries.some((d) => d.coalesced !== undefined)) await sleep(200);
    await booted.gateway.stop();
    const closing = deliveries.find((d) => d.coalesced !== undefined);
    log(
      `  ${result.responses} requests served past the open circuit; ${duringLoad} deliveries during the load, ` +
        `${deliveries.length} in all (${deliveries.map((d) => (d.coalesced === undefined ? d.event : `${d.event} coalesced_count=${d.coalesced}`)).join(', ')})`,
    );
    return {
      seconds: WEBHOOK_SECONDS,
      served: result.responses,
      duringLoad,
      total: deliveries.length,
      coalescedCount: closing?.coalesced ?? null,
      replicas: 1,
    };
  } finally {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
