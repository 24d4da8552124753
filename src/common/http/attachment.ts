/** File name extensions of the audio types the service answers with. */
const EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/webm': 'webm',
  'audio/mp4': 'm4a',
  'audio/aac': 'aac',
  'audio/l16': 'pcm',
};

/**
 * `Content-Disposition` for audio bytes: an attachment with a file name, so a browser (Swagger UI's
 * "Download file" link included) saves the bytes it already has instead of fetching the URL again.
 */
export function audioAttachment(baseName: string, contentType: string): string {
  const type = contentType.split(';')[0].trim().toLowerCase();
  const safe = baseName.replace(/[^A-Za-z0-9_.-]/g, '_');
  return `attachment; filename="${safe}.${EXTENSIONS[type] ?? 'bin'}"`;
}
