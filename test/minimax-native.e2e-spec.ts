import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { parseFirstMp3Frame, parseWavHeader } from '../src/audio/parse';
import { loadEsm } from '../src/common/esm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { MiniMaxFilesRetention } from '../src/minimax-compat/minimax-files.retention';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { eventsWhere, eventually } from './support/failover';
import { tinyWav } from './support/audio';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const MINIMAX = 'native-minimax';

/** What this test uses of the official `minimax-mcp-js` package (ESM, loaded as its users load it). */
interface AxiosLikeConfig {
  url?: string;
  data?: unknown;
}
interface MiniMaxApi {
  session: {
    interceptors: {
      request: { use(onFulfilled: (config: AxiosLikeConfig) => AxiosLikeConfig): number; eject(id: number): void };
    };
  };
}
interface McpPackage {
  MiniMaxAPI: new (config: { apiKey: string; apiHost: string; resourceMode?: 'url' | 'local' }) => MiniMaxApi;
  TTSAPI: new (api: MiniMaxApi) => {
    generateSpeech(request: Record<string, unknown>): Promise<{ audio: string; subtitle?: string }>;
  };
  VoiceAPI: new (api: MiniMaxApi) => {
    listVoices(request?: { voiceType?: string }): Promise<{ systemVoices: string[]; voiceCloneVoices: string[] }>;
  };
  VoiceDesignAPI: new (api: MiniMaxApi) => {
    voiceDesign(request: Record<string, unknown>): Promise<{ voiceId: string; outputFile: string }>;
  };
  VoiceCloneAPI: new (api: MiniMaxApi) => { cloneVoice(request: Record<string, unknown>): Promise<string> };
}

/** One module after the other: jest's ESM loader cannot link the same built-in for two imports at once. */
async function loadClient(): Promise<McpPackage> {
  const { MiniMaxAPI } = await loadEsm<Pick<McpPackage, 'MiniMaxAPI'>>('minimax-mcp-js/build/utils/api.js');
  const { TTSAPI } = await loadEsm<Pick<McpPackage, 'TTSAPI'>>('minimax-mcp-js/build/api/tts.js');
  const { VoiceAPI } = await loadEsm<Pick<McpPackage, 'VoiceAPI'>>('minimax-mcp-js/build/api/voice.js');
  const { VoiceDesignAPI } = await loadEsm<Pick<McpPackage, 'VoiceDesignAPI'>>(
    'minimax-mcp-js/build/api/voice-design.js',
  );
  const { VoiceCloneAPI } = await loadEsm<Pick<McpPackage, 'VoiceCloneAPI'>>('minimax-mcp-js/build/api/voice-clone.js');
  return { MiniMaxAPI, TTSAPI, VoiceAPI, VoiceDesignAPI, VoiceCloneAPI };
}

interface MiniMaxAnswer {
  data?: { audio: string; status: number };
  extra_info?: {
    audio_sample_rate: number;
    audio_channel: number;
    audio_format: string;
    audio_size: number;
    audio_length: number;
    usage_characters: number;
  };
  trace_id?: string;
  base_resp: { status_code: number; status_msg: string };
}

/** The official MiniMax client, pointed at the gateway by its API host: the only change its users make. */
describe('MiniMax-native surface (the official minimax-mcp-js client, host changed to the gateway)', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let secret: string;
  let espeakOnly: string;
  let mcp: McpPackage;
  let dir: string;

  /** The MiniMax answers of an SSE response, in order. */
  const sseEvents = async (res: Response): Promise<MiniMaxAnswer[]> =>
    (await res.text())
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as MiniMaxAnswer);
  const post = (path: string, body: unknown, key = secret): Promise<Response> =>
    fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'minimax-native-'));
    // where the client writes its files (its users set the same variable)
    process.env.MINIMAX_MCP_BASE_PATH = dir;
    mcp = await loadClient();
    minimax = await startFakeMiniMax({ name: MINIMAX });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: ${MINIMAX}, kind: minimax, base_url: "${minimax.url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`,
      'minimax native test',
    );
    t = await startApp({ gateway });
    ({ secret } = await t.createKey('minimax native', [
      { provider: MINIMAX, model: MODEL },
      { provider: 'espeak', model: MODEL, voice_map: { '*': 'en-us' } },
    ]));
    ({ secret: espeakOnly } = await t.createKey('espeak only', [
      { provider: 'espeak', model: MODEL, voice_map: { '*': 'en-us' } },
    ]));
  });
  afterEach(() => {
    minimax.setMode('ok');
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const client = (resourceMode: 'url' | 'local', key = secret): MiniMaxApi =>
    new mcp.MiniMaxAPI({ apiKey: key, apiHost: t.url, resourceMode });

  it('TTS, local mode: the client writes the hex audio it got to a WAV file of the requested rate and channels', async () => {
    const tts = new mcp.TTSAPI(client('local'));
    const { audio } = await tts.generateSpeech({
      text: 'Hello from the gateway.',
      model: MODEL,
      format: 'wav',
      sampleRate: 24000,
      channel: 2,
      outputDirectory: 'local',
    });
    const wav = parseWavHeader(readFileSync(audio));
    expect({ rate: wav.sampleRate, channels: wav.channels, bits: wav.bitsPerSample }).toEqual({
      rate: 24000,
      channels: 2,
      bits: 16,
    });
    expect(wav.dataLength).toBeGreaterThan(24000);
    // the client's own fields (emotion, language_boost) went through with the request
    expect(minimax.requests.filter((r) => r.path === '/v1/t2a_v2').length).toBeGreaterThan(0);
  });

  it('TTS, url mode: data.audio is a gateway link that downloads the MP3 without a key; a guessed link is 404', async () => {
    const tts = new mcp.TTSAPI(client('url'));
    const { audio: link } = await tts.generateSpeech({
      text: 'A link to my audio.',
      model: MODEL,
      format: 'mp3',
      sampleRate: 44100,
      channel: 1,
      outputFormat: 'url',
    });
    expect(link.startsWith(`${t.url}/v1/t2a_v2/audio/`)).toBe(true);
    const download = await fetch(link);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('audio/mpeg');
    const frame = parseFirstMp3Frame(Buffer.from(await download.arrayBuffer()));
    expect({ rate: frame.sampleRate, channels: frame.channels }).toEqual({ rate: 44100, channels: 1 });
    const token = link.slice(link.lastIndexOf('/') + 1);
    const guessed = `${link.slice(0, link.lastIndexOf('/') + 1)}${token.slice(0, 10)}${'A'.repeat(33)}.mp3`;
    expect((await fetch(guessed)).status).toBe(404);
    // 24 h later (the row's expiry moved to the past) the link is gone; only the token's hash was stored
    const db = t.app.get(DataSource);
    const rows = await db.query<Array<{ link_hash: string; expires_at: Date }>>(
      `SELECT link_hash, expires_at FROM minimax_files WHERE purpose = 't2a'`,
    );
    expect(rows.some((r) => link.includes(r.link_hash))).toBe(false);
    const lasts = rows[rows.length - 1].expires_at.getTime() - Date.now();
    expect(lasts).toBeGreaterThan(23.9 * 3600 * 1000);
    expect(lasts).toBeLessThanOrEqual(24 * 3600 * 1000);
    await db.query(`UPDATE minimax_files SET expires_at = now() - interval '1 second' WHERE purpose = 't2a'`);
    expect((await fetch(link)).status).toBe(404);
    expect(await t.app.get(MiniMaxFilesRetention).apply()).toBeGreaterThan(0);
    expect(await db.query(`SELECT id FROM minimax_files WHERE purpose = 't2a'`)).toEqual([]);
  });

  it('the same client gets the same from the fake MiniMax itself (the reference the gateway is held to)', async () => {
    const direct = new mcp.MiniMaxAPI({ apiKey: 'k', apiHost: new URL(minimax.url).origin, resourceMode: 'local' });
    const { audio } = await new mcp.TTSAPI(direct).generateSpeech({
      text: 'Hello from MiniMax.',
      model: MODEL,
      format: 'wav',
      sampleRate: 24000,
      channel: 2,
      outputDirectory: 'direct',
    });
    expect(parseWavHeader(readFileSync(audio))).toMatchObject({ sampleRate: 24000, channels: 2 });
    const { audio: link } = await new mcp.TTSAPI(direct).generateSpeech({
      text: 'A link.',
      model: MODEL,
      format: 'mp3',
      sampleRate: 44100,
      outputFormat: 'url',
    });
    expect(parseFirstMp3Frame(Buffer.from(await (await fetch(link)).arrayBuffer())).sampleRate).toBe(44100);
  });

  it('fails over as the interface does: MiniMax down, espeak serves, the x-svc headers say so', async () => {
    minimax.setMode('http500');
    const res = await post('/v1/t2a_v2', {
      model: MODEL,
      text: 'Failover please.',
      voice_setting: { voice_id: 'male-qn-qingse', emotion: 'happy' },
      audio_setting: { format: 'pcm', sample_rate: 16000 },
      language_boost: 'auto',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe('espeak');
    expect(res.headers.get('x-svc-fallback-level')).toBe('1');
    const body = (await res.json()) as MiniMaxAnswer;
    expect(body.base_resp).toEqual({ status_code: 0, status_msg: 'success' });
    expect(body.trace_id).toBe(res.headers.get('x-svc-request-id'));
    expect(body.extra_info).toMatchObject({
      audio_sample_rate: 16000,
      audio_channel: 1,
      audio_format: 'pcm',
      usage_characters: 16,
    });
    const pcm = Buffer.from(body.data?.audio ?? '', 'hex');
    expect(body.extra_info?.audio_size).toBe(pcm.length);
    expect(body.extra_info?.audio_length).toBe(Math.round((pcm.length / 2 / 16000) * 1000));

    // the same usage record and failover event as the interface's speech
    const requestId = String(res.headers.get('x-svc-request-id'));
    const usage = async (): Promise<Array<Record<string, unknown>>> =>
      (
        (await t.http.get('/v1/usage').query({ request_id: requestId }).set('Authorization', `Bearer ${secret}`))
          .body as { data: Array<Record<string, unknown>> }
      ).data;
    const [record] = await eventually(usage, (records) => records.length === 1, 5000, 'usage record');
    expect(record).toMatchObject({
      capability: 'speech',
      provider: 'espeak',
      fallback_level: 1,
      status: 200,
      characters: 16,
    });
    const events = await eventually(
      () => eventsWhere(t, "data->>'request_id' = $1", [requestId]),
      (rows) => rows.length > 0,
      5000,
      'failover event',
    );
    expect(events.map((e) => e.type)).toContain('failover');
  });

  it("answers errors as MiniMax does: HTTP 200, base_resp 1004 / 2013 / 1000, and the client's error types", async () => {
    const noKey = await fetch(`${t.url}/v1/t2a_v2`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: MODEL, text: 'x' }),
    });
    expect(noKey.status).toBe(200);
    expect(((await noKey.json()) as MiniMaxAnswer).base_resp.status_code).toBe(1004);

    const badSpeed = await post('/v1/t2a_v2', {
      model: MODEL,
      text: 'x',
      voice_setting: { voice_id: 'male-qn-qingse', speed: 5 },
    });
    expect(badSpeed.status).toBe(200);
    const refused = (await badSpeed.json()) as MiniMaxAnswer;
    expect(refused.base_resp.status_code).toBe(2013);
    expect(refused.base_resp.status_msg).toContain('speed');
    expect(badSpeed.headers.get('x-svc-provider-used')).toBe('none');

    minimax.setMode('http500');
    const { secret: minimaxOnly } = await t.createKey('minimax only', [{ provider: MINIMAX, model: MODEL }]);
    const failed = await post(
      '/v1/t2a_v2',
      { model: MODEL, text: 'Nobody can say this.', voice_setting: { voice_id: 'male-qn-qingse' } },
      minimaxOnly,
    );
    expect(failed.status).toBe(200);
    expect(((await failed.json()) as MiniMaxAnswer).base_resp.status_code).toBe(1000);
    expect(failed.headers.get('x-svc-provider-used')).toBe('none');

    // the client reads 1004 as an auth error (its message asks to check key and host)
    await expect(
      new mcp.TTSAPI(new mcp.MiniMaxAPI({ apiKey: 'sk-wrong', apiHost: t.url, resourceMode: 'local' })).generateSpeech({
        text: 'x',
      }),
    ).rejects.toThrow(/check your API key/);
  });

  it('streams MiniMax SSE: audio events, then a final event with the whole clip (or none with exclude_aggregated_audio)', async () => {
    for (const exclude of [false, true]) {
      const res = await post('/v1/t2a_v2', {
        model: MODEL,
        text: 'Streaming speech arrives in pieces.',
        stream: true,
        ...(exclude ? { stream_options: { exclude_aggregated_audio: true } } : {}),
        voice_setting: { voice_id: 'male-qn-qingse' },
        audio_setting: { format: 'mp3', sample_rate: 32000 },
      });
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      expect(res.headers.get('x-svc-provider-used')).toBe(MINIMAX);
      const events = (await res.text())
        .split('\n\n')
        .filter((e) => e.startsWith('data: '))
        .map((e) => JSON.parse(e.slice(6)) as MiniMaxAnswer);
      const chunks = events.filter((e) => e.data?.status === 1);
      const final = events[events.length - 1];
      expect(chunks.length).toBeGreaterThan(0);
      expect(final.data?.status).toBe(2);
      expect(final.base_resp.status_code).toBe(0);
      const streamed = Buffer.from(chunks.map((c) => c.data?.audio ?? '').join(''), 'hex');
      expect(final.data?.audio).toBe(exclude ? '' : streamed.toString('hex'));
      expect(final.extra_info?.audio_size).toBe(streamed.length);
      expect(parseFirstMp3Frame(streamed).sampleRate).toBe(32000);
    }
  });

  it('continues an SSE stream whose provider fails after the first audio on the next step, to its final event', async () => {
    minimax.setMode('midStreamBaseRespError');
    const res = await post('/v1/t2a_v2', {
      model: MODEL,
      text: 'This stream will break.',
      stream: true,
      voice_setting: { voice_id: 'male-qn-qingse' },
    });
    const events = await sseEvents(res);
    minimax.setMode('ok');
    expect(events[0].data?.status).toBe(1);
    // the rest of the text from the next step (decisions §7): one answer, no error event
    expect(events.every((e) => e.base_resp.status_code === 0)).toBe(true);
    expect(events[events.length - 1].data?.status).toBe(2);
  });

  it('ends an SSE stream whose provider fails after the first audio with an error event (base_resp 1000) and no final event when no later step can speak', async () => {
    const { secret: alone } = await t.createKey('minimax alone', [{ provider: MINIMAX, model: MODEL }]);
    minimax.setMode('midStreamBaseRespError');
    const res = await post(
      '/v1/t2a_v2',
      { model: MODEL, text: 'This stream will break.', stream: true, voice_setting: { voice_id: 'male-qn-qingse' } },
      alone,
    );
    const events = await sseEvents(res);
    minimax.setMode('ok');
    expect(events[0].data?.status).toBe(1);
    expect(events.some((e) => e.data?.status === 2)).toBe(false);
    expect(events[events.length - 1].base_resp.status_code).toBe(1000);
  });

  it("lists voices with get_voice: the chain's system voices and the key's custom voices", async () => {
    const { systemVoices } = await new mcp.VoiceAPI(client('local')).listVoices({ voiceType: 'all' });
    expect(systemVoices).toEqual(
      expect.arrayContaining(['Name: Qingse (young man), ID: male-qn-qingse', expect.stringMatching(/ID: en-us$/)]),
    );
  });

  it('designs a voice: the client saves trial_audio (MP3 spoken with the new voice) and gets the id to speak with', async () => {
    const { voiceId, outputFile } = await new mcp.VoiceDesignAPI(client('local')).voiceDesign({
      prompt: 'A calm narrator.',
      previewText: 'Once upon a time.',
      voiceId: 'Narrator01',
    });
    expect(voiceId).toMatch(/^voice_/);
    expect(parseFirstMp3Frame(readFileSync(outputFile)).sampleRate).toBe(32000);
    expect(minimax.requests.filter((r) => r.path === '/v1/voice_design').pop()?.body).toMatchObject({
      prompt: 'A calm narrator.',
      preview_text: 'Once upon a time.',
    });
    const { voice_generation: designed } = (await (
      await post('/v1/get_voice', { voice_type: 'voice_generation' })
    ).json()) as { voice_generation: Array<{ voice_id: string; voice_name: string }> };
    expect(designed).toContainEqual(expect.objectContaining({ voice_id: voiceId, voice_name: 'Narrator01' }));
  });

  it("refuses a clone without consent_id in MiniMax's shape, and nothing reaches the provider", async () => {
    const sample = join(dir, 'sample.wav');
    writeFileSync(sample, tinyWav(16000 * 11));
    minimax.reset();
    await expect(
      new mcp.VoiceCloneAPI(client('local')).cloneVoice({ audioFile: sample, voiceId: 'MyClonedVoice1' }),
    ).rejects.toThrow(/consent_id/);
    expect(minimax.count('/v1/files/upload')).toBe(0);
    expect(minimax.count('/v1/voice_clone')).toBe(0);
  });

  it("clones with a consent of the key: consent_id added to the client's own request by an axios interceptor", async () => {
    const consent = await t.http
      .post('/v1/audio/voice_consents')
      .set('Authorization', `Bearer ${secret}`)
      .field('name', 'Consent of Ada')
      .field('language', 'en-US')
      .attach('recording', tinyWav(), 'consent.wav');
    expect(consent.status).toBe(200);
    const consentId = (consent.body as { id: string }).id;
    const sample = join(dir, 'sample.wav');
    writeFileSync(sample, tinyWav(16000 * 11));
    const api = client('local');
    // the one addition a MiniMax client makes to pass the gateway's consent gate: an extra JSON field
    api.session.interceptors.request.use((config) =>
      config.url?.endsWith('/v1/voice_clone')
        ? { ...config, data: { ...(config.data as object), consent_id: consentId } }
        : config,
    );
    minimax.reset();
    expect(await new mcp.VoiceCloneAPI(api).cloneVoice({ audioFile: sample, voiceId: 'MyClonedVoice1' })).toBe(
      'MyClonedVoice1',
    );
    expect(minimax.count('/v1/voice_clone')).toBe(1);
    const { voiceCloneVoices } = await new mcp.VoiceAPI(api).listVoices({ voiceType: 'all' });
    expect(voiceCloneVoices).toEqual([expect.stringMatching(/^Name: MyClonedVoice1, ID: voice_/)]);
  });

  it('runs the async trio: t2a_async_v2, then query until Success, then files/retrieve and its download', async () => {
    const submit = (await (
      await post(
        '/v1/t2a_async_v2',
        {
          model: MODEL,
          text: 'A long text. In two sentences.',
          voice_setting: { voice_id: 'en-us' },
          audio_setting: { format: 'wav', sample_rate: 22050 },
        },
        espeakOnly,
      )
    ).json()) as {
      task_id: string;
      file_id: string;
      usage_characters: number;
      base_resp: { status_code: number };
    };
    expect(submit).toMatchObject({
      task_id: expect.stringMatching(/^task_/),
      usage_characters: 30,
      base_resp: { status_code: 0 },
    });
    let status = '';
    for (let i = 0; i < 200 && status !== 'Success'; i++) {
      const query = await fetch(`${t.url}/v1/query/t2a_async_query_v2?task_id=${submit.task_id}`, {
        headers: { Authorization: `Bearer ${espeakOnly}` },
      });
      status = ((await query.json()) as { status: string }).status;
      expect(['Processing', 'Success']).toContain(status);
      if (status !== 'Success') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe('Success');
    const retrieved = (await (
      await fetch(`${t.url}/v1/files/retrieve?file_id=${submit.file_id}`, {
        headers: { Authorization: `Bearer ${espeakOnly}` },
      })
    ).json()) as {
      file: { download_url: string; bytes: number };
    };
    const download = await fetch(retrieved.file.download_url, { headers: { Authorization: `Bearer ${espeakOnly}` } });
    const wav = Buffer.from(await download.arrayBuffer());
    expect(wav.length).toBe(retrieved.file.bytes);
    expect(parseWavHeader(wav).sampleRate).toBe(22050);

    const unknown = (await (
      await fetch(`${t.url}/v1/query/t2a_async_query_v2?task_id=task_nope`, {
        headers: { Authorization: `Bearer ${espeakOnly}` },
      })
    ).json()) as MiniMaxAnswer;
    expect(unknown.base_resp.status_code).toBe(2013);
  });
});

describe('MiniMax-native rate limit', () => {
  let t: TestApp;
  afterAll(() => t.close());

  it("answers the key's rate limit with base_resp 1002, as MiniMax does", async () => {
    t = await startApp({ env: { SVC_RATE_LIMIT_RPM: '2' } });
    const { secret } = await t.createKey('limited', [{ provider: 'espeak', model: MODEL }]);
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${t.url}/v1/get_voice`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(200);
      codes.push(((await res.json()) as MiniMaxAnswer).base_resp.status_code);
    }
    expect(codes.slice(0, 2)).toEqual([0, 0]);
    expect(codes.slice(2)).toEqual([1002, 1002]);
  });
});
