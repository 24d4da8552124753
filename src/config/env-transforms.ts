/** The value readers the environment schema's files share. */

const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `3600`, `90s`, `30m`, `24h`, `7d` → seconds; anything else is left for the validator to refuse. */
export const toSeconds = ({
  value,
  key,
  obj,
}: {
  value: unknown;
  key: string;
  obj: Record<string, unknown>;
}): unknown => {
  // the raw string: implicit conversion has already turned `24h` into NaN in `value`
  const raw = obj[key];
  if (typeof raw !== 'string') return value;
  const match = /^\s*(\d+)\s*([smhd]?)\s*$/i.exec(raw);
  return match ? Number(match[1]) * DURATION_UNITS[(match[2] || 's').toLowerCase()] : value;
};

/** `true`/`1` or `false`/`0`/empty from the raw text (implicit conversion has already turned any non-empty string, `false` included, into `true`). */
export const rawBool = ({
  value,
  key,
  obj,
}: {
  value: unknown;
  key: string;
  obj: Record<string, unknown>;
}): unknown => {
  const raw = obj[key];
  if (typeof raw !== 'string') return value;
  const text = raw.trim().toLowerCase();
  return text === 'true' || text === '1' ? true : text === 'false' || text === '0' || text === '' ? false : raw;
};
