/**
 * Ogg page framing (RFC 3533) for one logical Opus stream. No kept Ogg muxer for Node exists on the registry
 * (prism-media's is in an unreleased alpha), so this is the minimum: pages, lacing and the page CRC. The codec
 * itself is libopus (opusscript); a test reads these pages back with an independent Ogg Opus decoder.
 */

/** CRC-32 of Ogg pages: polynomial 0x04c11db7, not reflected, initial value 0, no final xor. */
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let bit = 0; bit < 8; bit++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]) & 0xff]) >>> 0;
  return crc >>> 0;
}

export const OGG_BOS = 0x02;
export const OGG_EOS = 0x04;
/** A page holds at most 255 lacing values. */
const MAX_SEGMENTS = 255;

/** Lacing values of one packet: 255s, then the remainder (0 when the length is a multiple of 255). */
function lacing(length: number): number[] {
  const values = new Array<number>(Math.floor(length / 255)).fill(255);
  values.push(length % 255);
  return values;
}

/** Writes the pages of one logical stream; packets are never split across pages. */
export class OggStreamWriter {
  private sequence = 0;

  constructor(private readonly serial: number) {}

  /** One page holding whole packets; `granule` is the stream position after its last packet. */
  page(packets: readonly Buffer[], granule: bigint, flags = 0): Buffer {
    const segments = packets.flatMap((packet) => lacing(packet.length));
    if (segments.length > MAX_SEGMENTS) throw new RangeError(`${segments.length} lacing values do not fit one page`);
    const header = Buffer.alloc(27 + segments.length);
    header.write('OggS', 0, 'latin1');
    header.writeUInt8(0, 4); // stream structure version
    header.writeUInt8(flags, 5);
    header.writeBigInt64LE(granule, 6);
    header.writeUInt32LE(this.serial, 14);
    header.writeUInt32LE(this.sequence++, 18);
    header.writeUInt32LE(0, 22); // CRC, computed over the page with this field zero
    header.writeUInt8(segments.length, 26);
    Buffer.from(segments).copy(header, 27);
    const page = Buffer.concat([header, ...packets]);
    page.writeUInt32LE(oggCrc(page), 22);
    return page;
  }

  /** Pages for `packets` (each ending at the granule given beside it), as few as the 255-segment limit allows. */
  pages(packets: ReadonlyArray<{ data: Buffer; granule: bigint }>, lastFlags = 0): Buffer {
    const out: Buffer[] = [];
    let group: Array<{ data: Buffer; granule: bigint }> = [];
    let segments = 0;
    const flush = (flags: number): void => {
      if (group.length === 0) return;
      out.push(
        this.page(
          group.map((p) => p.data),
          group[group.length - 1].granule,
          flags,
        ),
      );
      group = [];
      segments = 0;
    };
    for (const packet of packets) {
      const needed = Math.floor(packet.data.length / 255) + 1;
      if (segments + needed > MAX_SEGMENTS) flush(0);
      group.push(packet);
      segments += needed;
    }
    flush(lastFlags);
    return Buffer.concat(out);
  }
}

/** One page as read back: what tests and `oggOpusSeconds` need. */
export interface OggPage {
  flags: number;
  granule: bigint;
  serial: number;
  sequence: number;
  packets: Buffer[];
  /** The CRC in the page equals the one computed over it. */
  crcOk: boolean;
}

/** Splits an Ogg stream into its pages (packets spanning pages are not joined: this writer never makes them). */
export function readOggPages(bytes: Buffer): OggPage[] {
  const pages: OggPage[] = [];
  let at = 0;
  while (at + 27 <= bytes.length) {
    if (bytes.toString('latin1', at, at + 4) !== 'OggS') throw new Error(`no Ogg page at byte ${at}`);
    const count = bytes[at + 26];
    const table = bytes.subarray(at + 27, at + 27 + count);
    let bodyAt = at + 27 + count;
    const bodyLength = table.reduce((sum, v) => sum + v, 0);
    const page = Buffer.from(bytes.subarray(at, bodyAt + bodyLength));
    const stored = page.readUInt32LE(22);
    page.writeUInt32LE(0, 22);
    const packets: Buffer[] = [];
    let length = 0;
    for (const value of table) {
      length += value;
      if (value < 255) {
        packets.push(bytes.subarray(bodyAt, bodyAt + length));
        bodyAt += length;
        length = 0;
      }
    }
    pages.push({
      flags: bytes[at + 5],
      granule: bytes.readBigInt64LE(at + 6),
      serial: bytes.readUInt32LE(at + 14),
      sequence: bytes.readUInt32LE(at + 18),
      packets,
      crcOk: oggCrc(page) === stored,
    });
    at += 27 + count + bodyLength;
  }
  return pages;
}

/** Seconds of an Ogg Opus file: the last page's granule less the pre-skip, at Opus's 48 kHz clock. */
export function oggOpusSeconds(bytes: Buffer): number {
  const pages = readOggPages(bytes);
  const head = pages[0]?.packets[0];
  if (!head || head.toString('latin1', 0, 8) !== 'OpusHead') throw new Error('not an Ogg Opus stream');
  const preSkip = head.readUInt16LE(10);
  return Number(pages[pages.length - 1].granule - BigInt(preSkip)) / 48000;
}
