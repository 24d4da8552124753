import { cpus } from 'node:os';
import { join } from 'node:path';
import { createStreamingEncoder, type StreamingFormat } from '../src/audio/encoders';
import { float32ToInt16, toChannels } from '../src/audio/pcm';
import { projectRoot } from '../src/common/paths';
import { writeSection } from './results-file';

/**
 * CPU that encoding costs per second of audio: the encoders the audio workers run (Ogg Opus through libopus,
 * G.711 µ-law, mp3 and FLAC beside them for scale), fed 100 ms blocks as a stream is, on this one thread.
 * `BENCH_ENCODE_SECONDS` of audio per case (default 60). No target: printed for information.
 */
const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const SECONDS = Number(process.env.BENCH_ENCODE_SECONDS ?? 60);
const BLOCK_SECONDS = 0.1;

interface Case {
  format: StreamingFormat;
  sampleRate: number;
  channels: number;
  bitrate: number;
}

const CASES: Case[] = [
  { format: 'opus', sampleRate: 24000, channels: 1, bitrate: 32000 },
  { format: 'opus', sampleRate: 24000, channels: 1, bitrate: 128000 },
  { format: 'opus', sampleRate: 32000, channels: 1, bitrate: 128000 },
  { format: 'opus', sampleRate: 44100, channels: 2, bitrate: 128000 },
  { format: 'pcmu_raw', sampleRate: 8000, channels: 1, bitrate: 0 },
  { format: 'pcmu_raw', sampleRate: 32000, channels: 1, bitrate: 0 },
  { format: 'mp3', sampleRate: 24000, channels: 1, bitrate: 128000 },
  { format: 'flac', sampleRate: 24000, channels: 1, bitrate: 0 },
];

/** Speech-like test audio: a gliding voiced tone with harmonics and a little noise (deterministic). */
function signal(sampleRate: number, channels: number, seconds: number): Int16Array {
  const mono = new Float32Array(Math.round(sampleRate * seconds));
  let phase = 0;
  let seed = 1;
  for (let i = 0; i < mono.length; i++) {
    const f0 = 140 + 40 * Math.sin((2 * Math.PI * i) / (sampleRate * 0.7));
    phase += (2 * Math.PI * f0) / sampleRate;
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const noise = (seed / 0x7fffffff - 0.5) * 0.02;
    mono[i] = 0.3 * Math.sin(phase) + 0.12 * Math.sin(2 * phase) + 0.06 * Math.sin(3 * phase) + noise;
  }
  return toChannels(float32ToInt16(mono), channels);
}

async function measure(c: Case): Promise<{ cpuMsPerSecond: number; realtime: number; bytesPerSecond: number }> {
  const samples = signal(c.sampleRate, c.channels, SECONDS);
  const block = Math.round(c.sampleRate * BLOCK_SECONDS) * c.channels;
  const encoder = await createStreamingEncoder(c.format, c);
  let bytes = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  for (let at = 0; at < samples.length; at += block) bytes += encoder.push(samples.subarray(at, at + block)).length;
  bytes += encoder.end().length;
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  return { cpuMsPerSecond: cpuMs / SECONDS, realtime: (SECONDS * 1000) / wallMs, bytesPerSecond: bytes / SECONDS };
}

/** The codecs' modules and the JIT are paid once per worker, not per second of audio: every case runs 5 s first. */
async function warmUp(): Promise<void> {
  for (const c of CASES) {
    const encoder = await createStreamingEncoder(c.format, c);
    const samples = signal(c.sampleRate, c.channels, 5);
    const block = Math.round(c.sampleRate * BLOCK_SECONDS) * c.channels;
    for (let at = 0; at < samples.length; at += block) encoder.push(samples.subarray(at, at + block));
    encoder.end();
  }
}

async function main(): Promise<void> {
  await warmUp();
  const rows: string[] = [];
  for (const c of CASES) {
    const r = await measure(c);
    const shape = `${c.sampleRate / 1000} kHz, ${c.channels} ch${c.bitrate ? `, ${c.bitrate / 1000} kbps` : ''}`;
    rows.push(
      `| ${c.format} | ${shape} | ${r.cpuMsPerSecond.toFixed(2)} | ${Math.round(r.realtime)}× | ${Math.round(r.bytesPerSecond)} |`,
    );
    process.stdout.write(`${rows[rows.length - 1]}\n`);
  }
  const body = [
    '## Encoding cost per second of audio',
    '',
    `${SECONDS} s of speech-like audio per case, fed in ${BLOCK_SECONDS * 1000} ms blocks to the encoder the audio workers run, on one thread of ${cpus()[0]?.model ?? 'this machine'} (Node ${process.version}). No target: for sizing the audio workers.`,
    '',
    '| format | shape | CPU ms per s of audio | faster than real time | bytes per s |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  process.stdout.write(`\n${body}\n`);
  writeSection(RESULTS_FILE, 'encoding', body);
}

void main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
