/**
 * Turning the bytes of a text document (`.md`, `.markdown`, `.txt`, `.html`, `.htm`) into a string, saying so when
 * the bytes are not what they claim to be.
 *
 * Rules, in order:
 * 1. A UTF-16 byte order mark (`FF FE` little endian, `FE FF` big endian) → decoded as UTF-16 (fatal: a broken
 *    surrogate is the next rule's binary); no warning, a BOM states the encoding.
 * 2. Any NUL byte (0x00) → binary: the file is skipped. No text format this tool reads contains NUL, and every
 *    executable, image and archive does (`/usr/bin/ls` renamed `ls.md` is skipped, not indexed).
 * 3. Valid UTF-8 (checked with `buffer.isUtf8`, i.e. WHATWG fatal decoding) → decoded as UTF-8, a leading BOM
 *    dropped; no warning. Plain ASCII is valid UTF-8.
 * 4. Otherwise → decoded as Windows-1252 (WHATWG `windows-1252`, what browsers use for `latin1`/`iso-8859-1` too),
 *    with a warning naming the file. Every byte sequence decodes under Windows-1252, so nothing is lost; text that was
 *    in another 8-bit code page (Cyrillic, Greek, ...) comes out as the wrong letters, which the warning says.
 *
 * HTML entities: decoded for `.html`/`.htm` documents only, after their tags are stripped (documents.ts), with
 * html-entities (`decode`, HTML5 table). Markdown and plain text are kept exactly as written: evidence ranges and
 * chunk offsets refer to the file's characters, `&amp;` in a markdown file is usually code or an example, and
 * decoding it would move every offset after it. BEIR corpora are kept as published (their fingerprints, and the
 * caches keyed on them, stay the same).
 */
import { Buffer, isUtf8 } from 'node:buffer';

/** What {@link decodeDocumentBytes} made of a file's bytes. */
export type DecodedText =
  | {
      kind: 'text';
      /** The decoded text (UTF-16 code units), without a leading byte order mark. */
      text: string;
      /** `utf-8`, `utf-16le`, `utf-16be` or `windows-1252` (the fallback, with a warning). */
      encoding: 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';
      /** Set when the text was not valid UTF-8 and was read as Windows-1252; names the file. */
      warning?: string;
    }
  | {
      kind: 'binary';
      /** Offset of the first NUL byte (0-based). */
      nulAt: number;
      /** Why the file is skipped; names the file. */
      warning: string;
    };

/**
 * Windows-1252 bytes 0x80–0x9F as the WHATWG Encoding Standard's index-windows-1252 maps them (the five unassigned
 * bytes 81, 8D, 8F, 90, 9D map to the C1 controls of the same value). Every other byte is the Unicode code point of
 * the same value (ISO-8859-1). Written out because Node 20's `TextDecoder('windows-1252')` decodes 0x80–0x9F as
 * ISO-8859-1 C1 controls (0x93 → U+0093 instead of U+201C), contrary to the standard.
 */
const CP1252_HIGH = [
  0x20ac, 0x0081, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008d, 0x017d, 0x008f,
  0x0090, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x009d, 0x017e, 0x0178,
].map((c) => String.fromCharCode(c));

/** Decodes bytes as Windows-1252 (WHATWG); never fails, one UTF-16 code unit per byte. */
export function decodeWindows1252(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    .toString('latin1')
    .replace(/[\x80-\x9f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]);
}

/**
 * Decodes the bytes of a text document by the rules in this module's header.
 * @param bytes the file's bytes (not changed).
 * @param name the file's name or document id, used in the warnings.
 * @returns `{ kind: 'text', text, encoding, warning? }` or `{ kind: 'binary', nulAt, warning }`. Never throws.
 */
export function decodeDocumentBytes(bytes: Uint8Array, name: string): DecodedText {
  if (bytes.length >= 2) {
    const le = bytes[0] === 0xff && bytes[1] === 0xfe;
    const be = bytes[0] === 0xfe && bytes[1] === 0xff;
    if (le || be) {
      const encoding = le ? 'utf-16le' : 'utf-16be';
      try {
        // TextDecoder drops the BOM (ignoreBOM: false).
        return { kind: 'text', text: new TextDecoder(encoding, { fatal: true }).decode(bytes), encoding };
      } catch {
        // an odd length or a lone surrogate: fall through to the NUL rule (UTF-16 text of Latin letters holds NULs)
      }
    }
  }
  const nulAt = bytes.indexOf(0);
  if (nulAt !== -1) {
    return {
      kind: 'binary',
      nulAt,
      warning: `${name}: skipped, binary content (a NUL byte at offset ${nulAt}); a text document holds no NUL bytes`,
    };
  }
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) {
    const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    return { kind: 'text', text: buf.toString('utf8', start), encoding: 'utf-8' };
  }
  const bad = firstInvalidUtf8(bytes);
  return {
    kind: 'text',
    text: decodeWindows1252(bytes),
    encoding: 'windows-1252',
    warning:
      `${name}: not valid UTF-8 (byte 0x${bytes[bad].toString(16).padStart(2, '0')} at offset ${bad}); ` +
      'read as Windows-1252; if the text was in another encoding, convert the file to UTF-8',
  };
}

/**
 * Offset of the first byte of the first invalid UTF-8 sequence (WHATWG decoder rules: no overlongs, no surrogates,
 * nothing above U+10FFFF; a sequence cut short by the end counts). Only called on bytes known to be invalid.
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b < 0x80) need = 0;
    else if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      const [l, h] = k === 1 ? [lo, hi] : [0x80, 0xbf];
      if (c === undefined || c < l || c > h) return i;
    }
    i += need + 1;
  }
  return bytes.length - 1;
}
