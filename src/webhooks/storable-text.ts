/** A surrogate without its other half: UTF-8 cannot encode it, so PostgreSQL cannot store it. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** PostgreSQL's codes for text it refuses: a NUL or invalid UTF-8 (22021), an untranslatable character (22P05). */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

/** The text with every character PostgreSQL would refuse (NUL, unpaired surrogates) replaced by U+FFFD. */
export function storableText(text: string): string {
  return text.replaceAll('\0', '\uFFFD').replace(UNPAIRED_SURROGATE, '\uFFFD');
}

/** True when PostgreSQL refused a statement for the text it held. */
export function isUnstorableText(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNSTORABLE_TEXT.has(code);
}
