import { loadEsm } from '../common/esm';

/** The part of the ESM-only `file-type` package used here. */
interface FileTypeModule {
  fileTypeFromBuffer(bytes: Uint8Array): Promise<{ ext: string; mime: string } | undefined>;
}

/** Container formats accepted for consent recordings, by the extension file-type reports. */
const ACCEPTED: Record<string, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  flac: 'audio/flac',
  webm: 'audio/webm',
  mp4: 'audio/mp4',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
};

export const ACCEPTED_AUDIO = 'wav, mp3, ogg, flac, webm, mp4/m4a or aac';

let fileType: Promise<FileTypeModule> | null = null;

/** The audio content type decided from the bytes (never the file name), or null when not accepted audio. */
export async function sniffAudioType(bytes: Uint8Array): Promise<string | null> {
  fileType ??= loadEsm<FileTypeModule>('file-type');
  const detected = await (await fileType).fileTypeFromBuffer(bytes);
  return detected ? (ACCEPTED[detected.ext] ?? null) : null;
}
