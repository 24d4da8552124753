/** What the speech benchmark measures: its figures, the run they come from and the setup it describes. */
import type { LoadResult } from './load';

export interface SyncCell {
  target: 'upstream direct' | 'gateway';
  connections: number;
  result: LoadResult;
  /** Cores other processes used while it was measured. */
  otherCores: number;
}

export interface FirstAudio {
  format: string;
  samples: number;
  direct: { p50: number; p99: number };
  gateway: { p50: number; p99: number };
  otherCores: number;
}

export interface StreamsHeld {
  format: string;
  attempted: number;
  opened: number;
  /** Still open after the hold. */
  held: number;
  /** Of a sample of held streams, how many then spoke a sentence to task_finished. */
  working: number;
  sampled: number;
  openSeconds: number;
  rssBeforeMb: number;
  rssWithMb: number;
  peakRssMb: number;
  /** RSS growth per held stream. */
  perStreamKb: number;
  errors: string[];
  otherCores: number;
}

export interface EngineSpeed {
  format: string;
  audioSeconds: number;
  /** Median of the timed runs. */
  wallSeconds: number;
  rtf: number;
  bytes: number;
  /** How the audio length was read from the bytes. */
  lengthFrom: string;
  otherCores: number;
}

export interface Startup {
  /** Milliseconds from spawning `node dist/src/main.js` to the first 200 of the readiness probe, per measured boot. */
  bootsMs: number[];
  medianMs: number;
  probe: string;
  idleRssMb: number;
  idleAfterSeconds: number;
  rssAtReadyMb: number;
}

export interface SpeechRunInfo {
  date: string;
  /** 1-minute load average when the run started and when it ended. */
  loadAverage: [number, number];
  cores: number;
  cpu: string;
  node: string;
  warmupSeconds: number;
  seconds: number;
}

export interface SpeechFigures {
  sync: SyncCell[];
  firstAudio: FirstAudio[];
  streams: StreamsHeld[];
  engine: EngineSpeed[];
  startup: Startup;
}

export interface SpeechSetup {
  syncBody: string;
  wsText: string;
  engineChars: number;
  streamKeys: number;
}
