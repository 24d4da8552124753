import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { createBenchKey, startGateway, BENCH_ADMIN_TOKEN, gatewayEnv } from './processes';
import type { GatewayProcess } from './processes';
import type { Target } from './report';
import { log, Run } from './run';
import type { UpstreamUrls } from './upstream';

/** The gateway set-ups bench:chat measures, and how one is booted (its own process and database). */

export const GATEWAY_SCRIPT = join(projectRoot(), 'dist/src/main.js');
export const ADMIN_TOKEN = BENCH_ADMIN_TOKEN;
export const MODEL = 'bench-model';
export const CHAT_PATH = '/v1/chat/completions';
export const CHAT_BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
/** The same request asking for server-sent events (the fake upstream answers in 7 events plus [DONE]). */
export const STREAM_BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true });
/** Requests allowed to trip the primary's circuit (default threshold 5) before giving up. */
const TRIP_ATTEMPTS = 50;

export type ModeName = 'one-step' | 'failover' | 'circuit-open';

/** A gateway set-up measured as one target, in a gateway process (and database) of its own. */
export interface GatewayMode {
  target: Target;
  /** Which fake the `primary` provider points at. */
  primary: keyof UpstreamUrls;
  chain: Array<{ provider: string; model: string }>;
  env: Record<string, string>;
  /** The provider every measured response must name in x-svc-provider-used. */
  servedBy: string;
}

export const MODES: Record<ModeName, GatewayMode> = {
  'one-step': {
    target: 'gateway one step',
    primary: 'ok',
    chain: [{ provider: 'primary', model: MODEL }],
    env: {},
    servedBy: 'primary',
  },
  failover: {
    target: 'gateway failover',
    primary: 'down',
    chain: [
      { provider: 'primary', model: MODEL },
      { provider: 'backup', model: MODEL },
    ],
    // never trips: every request really tries the primary, gets its 500 and fails over
    env: { SVC_BREAKER_THRESHOLD: '1000000000' },
    servedBy: 'backup',
  },
  'circuit-open': {
    target: 'gateway circuit open',
    primary: 'down',
    chain: [
      { provider: 'primary', model: MODEL },
      { provider: 'backup', model: MODEL },
    ],
    env: {},
    servedBy: 'backup',
  },
};

/**
 * `BENCH_BASELINE`: another checkout's built gateway (its `dist/src/main.js`, or the checkout's root),
 * run alongside this one in the same interleaved rounds; null when unset.
 */
export function baselineScript(): string | null {
  const raw = process.env.BENCH_BASELINE;
  if (!raw) return null;
  const path = resolve(raw);
  const script = existsSync(path) && statSync(path).isDirectory() ? join(path, 'dist/src/main.js') : path;
  if (!existsSync(script)) throw new Error(`BENCH_BASELINE: no built gateway at ${script} (run nest build there)`);
  return script;
}

function gatewayYaml(urls: UpstreamUrls, mode: GatewayMode): string {
  return `providers:
  - name: primary
    kind: openai
    base_url: ${urls[mode.primary]}
    api_key: x
  - name: backup
    kind: openai
    base_url: ${urls.ok}
    api_key: x
  - name: dead
    kind: openai
    base_url: ${urls.down}
    api_key: x
`;
}

export interface BootedGateway {
  gateway: GatewayProcess;
  secret: string;
  database: string;
  /**
   * With `openKey`: a second key of the same gateway, its chain [dead, backup] with dead's circuit open, so
   * circuit open is measured in the very process one step is (the path compared, not two processes).
   */
  openSecret?: string;
}

export interface BootOptions {
  nodeArgs?: string[];
  /** Names the config, log and database (default: the mode's name). */
  label?: string;
  /** The gateway to run (default: this checkout's build). */
  script?: string;
  env?: Record<string, string>;
  /** Trip the primary's circuit before returning (default: only in circuit-open mode). */
  trip?: boolean;
  /** Also create a key served past the always-500ing `dead` provider's open circuit (see BootedGateway). */
  openKey?: boolean;
}

/** The chain of the `openKey` key: the 500ing provider every gateway has, then the answering backup. */
const OPEN_KEY_CHAIN = [
  { provider: 'dead', model: MODEL },
  { provider: 'backup', model: MODEL },
];

export async function bootGateway(
  run: Run,
  urls: UpstreamUrls,
  name: ModeName,
  options: BootOptions = {},
): Promise<BootedGateway> {
  const mode = MODES[name];
  const label = options.label ?? name;
  const config = join(run.tmp, `gateway-${label}.yaml`);
  writeFileSync(config, gatewayYaml(urls, mode));
  const database = await run.createDatabase(label);
  const gateway = run.track(
    await startGateway({
      script: options.script ?? GATEWAY_SCRIPT,
      // BENCH_NODE_ARGS: extra node flags for the gateway, to try one (e.g. a V8 heap setting) against the same run's references
      nodeArgs: [...(process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean), ...(options.nodeArgs ?? [])],
      logFile: join(run.tmp, `gateway-${label}.log`),
      env: gatewayEnv(database.url, config, {
        SVC_BREAKER_COOLDOWN_MS: '600000',
        ...mode.env,
        ...options.env,
      }),
    }),
  );
  const secret = await createBenchKey(gateway.url, `bench ${label}`, mode.chain);
  if (options.trip ?? name === 'circuit-open') await tripPrimary(gateway.url, secret);
  const booted: BootedGateway = { gateway, secret, database: database.name };
  if (options.openKey) {
    booted.openSecret = await createBenchKey(gateway.url, `bench ${label} past an open circuit`, OPEN_KEY_CHAIN);
    await tripPrimary(gateway.url, booted.openSecret, 'dead');
  }
  return booted;
}

/** Sends requests until the key's first step (`provider`) is skipped for an open circuit, then checks the health route agrees. */
export async function tripPrimary(url: string, secret: string, provider = 'primary'): Promise<void> {
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  for (let attempt = 1; attempt <= TRIP_ATTEMPTS; attempt++) {
    const res = await fetch(`${url}${CHAT_PATH}`, { method: 'POST', headers, body: CHAT_BODY });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`tripping ${provider}: HTTP ${res.status}`);
    if ((res.headers.get('x-svc-fallback-alert') ?? '').includes('circuit open')) {
      const health = (await (await fetch(`${url}/v1/providers/health`, { headers })).json()) as {
        providers: Array<{ provider: string; status: string }>;
      };
      const tripped = health.providers.find((p) => p.provider === provider);
      if (tripped?.status !== 'down') throw new Error(`${provider} skipped but health says ${JSON.stringify(tripped)}`);
      log(`  ${provider} circuit open after ${attempt} requests`);
      return;
    }
  }
  throw new Error(`${provider}'s circuit did not open within ${TRIP_ATTEMPTS} requests`);
}
