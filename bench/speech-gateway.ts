import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBenchKey, gatewayEnv, startGateway } from './processes';
import type { GatewayProcess } from './processes';
import type { Run } from './run';

/** The fake MiniMax's ready message. */
export const isUrl = (m: unknown): m is { url: string } => typeof m === 'object' && m !== null && 'url' in m;

/** A speech benchmark's gateway: its database's name and a way to make keys on it. */
export interface BootedGateway {
  gateway: GatewayProcess;
  database: string;
  createKey(name: string, chain: Array<{ provider: string; model: string }>): Promise<string>;
}

/** Starts `script` (a built gateway) with two providers: `minimax` at the fake's URL and the offline `espeak`. */
export async function bootSpeechGateway(
  run: Run,
  label: string,
  upstreamUrl: string,
  script: string,
): Promise<BootedGateway> {
  const config = join(run.tmp, `gateway-${label}.yaml`);
  writeFileSync(
    config,
    `providers:\n  - name: minimax\n    kind: minimax\n    base_url: ${upstreamUrl}\n    api_key: x\n  - name: espeak\n    kind: espeak\n`,
  );
  const database = await run.createDatabase(label);
  const gateway = run.track(
    await startGateway({
      script,
      logFile: join(run.tmp, `gateway-${label}.log`),
      env: gatewayEnv(database.url, config),
    }),
  );
  return {
    gateway,
    database: database.name,
    createKey: (name, chain) => createBenchKey(gateway.url, name, chain),
  };
}
