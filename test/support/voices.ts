import type { Response } from 'superagent';
import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../../src/config/gateway-config';
import type { ChainStepDto } from '../../src/config/chain-step.dto';
import { FakeMiniMax, startFakeMiniMax } from '../fakes/fake-minimax';
import { startApp, TestApp } from './app';
import { tinyWav } from './audio';

export const MODEL = 'speech-02-hd';
/** 11 s of 16 kHz mono: inside MiniMax's 10 s to 5 min. */
export const SAMPLE = tinyWav(16000 * 11);

export interface VoiceRecord {
  id: string;
  object: string;
  name: string;
  type: string;
  consent_id: string | null;
  provider: string;
  created_at: number;
  prompt?: string;
}

/** Collects a binary body into a Buffer (supertest buffers only text by default); a JSON error body is parsed. */
export function binary(res: Response, done: (err: Error | null, body: unknown) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => {
    const bytes = Buffer.concat(chunks);
    done(
      null,
      String(res.headers['content-type']).startsWith('application/json') ? JSON.parse(bytes.toString('utf8')) : bytes,
    );
  });
}

/** The app with a fake MiniMax (named `minimaxName`) and the offline engine, and the calls the voice tests make. */
export class VoicesHarness {
  private constructor(
    readonly t: TestApp,
    readonly minimax: FakeMiniMax,
    readonly db: DataSource,
  ) {}

  /** `allowedVoiceIds`: the MiniMax provider's `allowed_voice_ids`; `env`: the app's environment; `extraProviders`: YAML lines. */
  static async start(
    minimaxName: string,
    options: { allowedVoiceIds?: string[]; env?: Record<string, string>; extraProviders?: string[] } = {},
  ): Promise<VoicesHarness> {
    const minimax = await startFakeMiniMax({ name: minimaxName });
    const allowed = options.allowedVoiceIds ? `, allowed_voice_ids: [${options.allowedVoiceIds.join(', ')}]` : '';
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: ${minimaxName}, kind: minimax, base_url: "${minimax.url}", api_key: k${allowed} }\n  - { name: espeak, kind: espeak }\n${(options.extraProviders ?? []).map((line) => `${line}\n`).join('')}`,
      'voices test',
    );
    const t = await startApp({ gateway, ...(options.env ? { env: options.env } : {}) });
    return new VoicesHarness(t, minimax, t.app.get(DataSource));
  }

  async close(): Promise<void> {
    await this.t.close();
    await this.minimax.close();
  }

  async key(name: string, chain: ChainStepDto[]): Promise<string> {
    return (await this.t.createKey(name, chain)).secret;
  }

  auth = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];

  async createConsent(token: string): Promise<string> {
    const res = await this.t.http
      .post('/v1/audio/voice_consents')
      .set(...this.auth(token))
      .attach('recording', tinyWav(), 'consent.wav')
      .field('language', 'en-US')
      .field('name', 'Ada');
    if (res.status !== 200) throw new Error(`consent upload answered ${res.status}`);
    return res.body.id as string;
  }

  clone(token: string, fields: Record<string, string>, sample: Buffer | null = SAMPLE) {
    const req = this.t.http.post('/v1/audio/voices').set(...this.auth(token));
    for (const [name, value] of Object.entries(fields)) void req.field(name, value);
    return sample ? req.attach('audio_sample', sample, 'sample.wav') : req;
  }

  async cloneVoice(token: string, consent: string, name = 'Ada clone'): Promise<VoiceRecord> {
    const res = await this.clone(token, { name, consent });
    if (res.status !== 200) throw new Error(`clone answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as VoiceRecord;
  }

  deleteConsent(token: string, consent: string) {
    return this.t.http.delete(`/v1/audio/voice_consents/${consent}`).set(...this.auth(token));
  }

  deleteVoice(token: string, voice: string) {
    return this.t.http.delete(`/v1/audio/voices/${voice}`).set(...this.auth(token));
  }

  /** Upload, clone and design calls the fake received. */
  upstreamCalls(): number {
    return (
      this.minimax.count('/v1/files/upload') +
      this.minimax.count('/v1/voice_clone') +
      this.minimax.count('/v1/voice_design')
    );
  }

  /** The voice id the last T2A call carried upstream. */
  lastT2aVoice(): string | undefined {
    const calls = this.minimax.requests.filter((r) => r.path === '/v1/t2a_v2');
    return (calls[calls.length - 1]?.body as { voice_setting?: { voice_id?: string } } | undefined)?.voice_setting
      ?.voice_id;
  }

  async upstreamIdOf(id: string): Promise<string> {
    const rows: Array<{ upstream_voice_id: string }> = await this.db.query(
      'SELECT upstream_voice_id FROM custom_voices WHERE id = $1',
      [id],
    );
    return rows[0].upstream_voice_id;
  }

  /** Synchronous speech, MiniMax shape, 16 kHz WAV. */
  speak(token: string, voiceId: string) {
    return this.t.http
      .post('/v1/audio/speech')
      .set(...this.auth(token))
      .send({
        model: MODEL,
        text: 'Hello in my own voice.',
        voice_setting: { voice_id: voiceId },
        audio_setting: { format: 'wav', sample_rate: 16000 },
      })
      .buffer(true)
      .parse(binary);
  }
}
