import { parseGatewayConfig, type GatewayConfig } from '../../src/config/gateway-config';
import { planChunks } from '../../src/speech/tasks/chunk-plan';
import type { FakeMiniMax } from '../fakes/fake-minimax';
import type { TestApp } from './app';
import { eventually } from './failover';

export const MODEL = 'speech-02-hd';
export const PRIMARY_VOICE = 'male-qn-qingse';
export const FALLBACK_VOICE = 'female-shaonv';

/** Six chunks of about 970 characters, each named by its own word: `chunk 3` is the text that says Delta. */
const WORDS = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot'];
export const TEXT = WORDS.map((word) =>
  Array.from(
    { length: 12 },
    () => `In the ${word} part the keeper climbed the stairs and checked the lamp once more.`,
  ).join(' '),
).join(' ');
export const CHUNKS = planChunks(TEXT).map((c) => c.text);
export const CHUNK_3 = /Delta/;
/** Raw PCM at a low rate: the file is joined without an encoder's minutes of work. */
export const TASK_BODY = {
  model: MODEL,
  text: TEXT,
  voice_setting: { voice_id: 'narrator' },
  audio_setting: { format: 'pcm', sample_rate: 16000 },
};

export interface VoiceSwitchRecord {
  chunk: number;
  from: { provider: string; voice: string };
  to: { provider: string; voice: string };
  at: number;
  reason: string;
}

export interface PinnedTaskRecord {
  id: string;
  status: string;
  provider: string | null;
  fallback_level: number | null;
  error: { code: string; message: string } | null;
  voice_switches: VoiceSwitchRecord[];
}

/** Two MiniMax accounts as two providers: the entry step `mm-a`, the fallback `mm-b`. */
export const pinGateway = (a: FakeMiniMax, b: FakeMiniMax): GatewayConfig =>
  parseGatewayConfig(
    `providers:\n  - { name: mm-a, kind: minimax, base_url: "${a.url}", api_key: k }\n` +
      `  - { name: mm-b, kind: minimax, base_url: "${b.url}", api_key: k }\n`,
    'voice pin test',
  );

export const pinKey = (t: TestApp, name: string) =>
  t.createKey(name, [
    { provider: 'mm-a', model: MODEL, voice_map: { '*': PRIMARY_VOICE } },
    { provider: 'mm-b', model: MODEL, voice_map: { '*': FALLBACK_VOICE } },
  ]);

/** The chunks (by number) whose text `fake` received, once per request, in arrival order. */
export function chunksSpokenBy(fake: FakeMiniMax): number[] {
  return fake.requests
    .filter((r) => r.path === '/v1/t2a_v2')
    .map((r) => CHUNKS.indexOf((r.body as { text?: string }).text ?? ''));
}

export async function submitTask(t: TestApp, secret: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.http
    .post('/v1/audio/speech/async')
    .set('Authorization', `Bearer ${secret}`)
    .send({ ...TASK_BODY, ...extra });
  if (res.status !== 202) throw new Error(`task creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

export const taskRecord = (t: TestApp, secret: string, id: string): Promise<PinnedTaskRecord> =>
  t.http
    .get(`/v1/audio/speech/async/${id}`)
    .set('Authorization', `Bearer ${secret}`)
    .then((res) => res.body as PinnedTaskRecord);

export const finished = (t: TestApp, secret: string, id: string): Promise<PinnedTaskRecord> =>
  eventually(
    () => taskRecord(t, secret, id),
    (task) => ['completed', 'failed'].includes(task.status),
    60000,
    'the task to finish',
  );
