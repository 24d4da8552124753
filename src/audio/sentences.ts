/** Latin sentence ends: only a boundary when whitespace or the end follows ("3.14", "a.m.e" stay whole). */
const LATIN_END = new Set(['.', '!', '?', '…']);
/** CJK full-width sentence ends: a boundary wherever they are, CJK text has no spaces. */
const CJK_END = new Set(['。', '！', '？', '．']);
/** Closing quotes and brackets that belong to the sentence they close. */
const CLOSERS = new Set(['"', "'", '”', '’', '»', ')', ']', '}', '」', '』', '）', '】', '〉', '》']);
/** Clause marks to break at when a sentence is too long. */
const CLAUSE_MARKS = new Set([',', ';', ':', '，', '、', '；', '：', '—', '–']);

/** Sentences of at most `maxChars` UTF-16 units (long ones break at a comma, else a space, else hard), trimmed, nothing else lost. */
export function splitSentences(text: string, maxChars: number): string[] {
  if (!Number.isInteger(maxChars) || maxChars < 2)
    throw new RangeError(`maxChars must be an integer ≥ 2, got ${maxChars}`);
  const pieces: string[] = [];
  for (const sentence of sentences(text)) {
    for (const piece of fit(sentence, maxChars)) pieces.push(piece);
  }
  return pieces;
}

/** Greedily joins consecutive pieces with a space while they fit in `maxChars` (fewer engine calls). */
export function packSentences(pieces: string[], maxChars: number): string[] {
  const packed: string[] = [];
  for (const piece of pieces) {
    const last = packed.length - 1;
    if (last >= 0 && packed[last].length + 1 + piece.length <= maxChars) packed[last] += ` ${piece}`;
    else packed.push(piece);
  }
  return packed;
}

function* sentences(text: string): Generator<string> {
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let end = -1;
    if (c === '\n' || c === '\r') {
      end = i;
      i += 1;
    } else if (CJK_END.has(c) || LATIN_END.has(c)) {
      const cjk = CJK_END.has(c);
      let j = i + 1;
      while (j < text.length && (LATIN_END.has(text[j]) || CJK_END.has(text[j]))) j++; // "?!", "...", "！？"
      while (j < text.length && CLOSERS.has(text[j])) j++;
      if (cjk || j === text.length || /\s/.test(text[j])) end = j;
      i = j;
    } else {
      i += 1;
    }
    if (end >= 0) {
      const sentence = text.slice(start, end).trim();
      if (sentence) yield sentence;
      start = end;
    }
  }
  const rest = text.slice(start).trim();
  if (rest) yield rest;
}

function* fit(sentence: string, maxChars: number): Generator<string> {
  let rest = sentence;
  while (rest.length > maxChars) {
    const cut = breakPoint(rest, maxChars);
    const head = rest.slice(0, cut).trim();
    if (head) yield head;
    rest = rest.slice(cut).trim();
  }
  if (rest) yield rest;
}

/** Where to cut `text` so the head fits in `maxChars`: after a clause mark, else at a space, else hard. */
function breakPoint(text: string, maxChars: number): number {
  for (let i = maxChars - 1; i > 0; i--) {
    if (CLAUSE_MARKS.has(text[i])) return i + 1;
  }
  for (let i = maxChars; i > 0; i--) {
    if (/\s/.test(text[i])) return i;
  }
  // never split a surrogate pair (emoji, rare CJK): back off one unit
  const code = text.charCodeAt(maxChars - 1);
  return code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars;
}
