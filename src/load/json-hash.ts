/**
 * Feeding a hash the bytes of `JSON.stringify(value)` without building that string.
 *
 * Why: the dataset fingerprint is sha256 over one JSON record per document (`["<id>","<text>"]\n`). Building each
 * record with `JSON.stringify` allocates as many bytes of short-lived strings as the corpus holds (1.1 GB for a
 * million documents), and in V8 every young-generation collection costs more the larger the old generation already is,
 * so that garbage made the fingerprint grow faster than the corpus (1.2 s at 200k documents, 7.5 s at 1M, measured).
 * Here the code units to escape are found with a native regex scan, and the runs between them are encoded to UTF-8,
 * 64K code units at a time, straight into one reused output buffer (1 MiB; through a second buffer when the output
 * buffer is smaller than a piece), which is handed to the hash when full: no allocation per document beyond the
 * regex's match objects (one per escape) and bounded memory for any document length, the same bytes as before, so
 * fingerprints are unchanged.
 *
 * Escaping follows ECMA-262 `QuoteJSONString` (ES2019 "well-formed JSON.stringify"): `"` and `\` are escaped with a
 * backslash; U+0008, U+0009, U+000A, U+000C, U+000D as `\b \t \n \f \r`; other code points below U+0020 as `\u00xx`
 * (lowercase hex); lone surrogates as `\udxxx`. Every other code point is written as its UTF-8 bytes. Strings with a
 * lone surrogate (never produced by the loaders, which decode UTF-8) take `JSON.stringify` itself.
 */
import { Buffer } from 'node:buffer';

/**
 * What a {@link JsonHashWriter} feeds: a node `crypto.Hash`, or any object with an `update(bytes)` that consumes the
 * bytes before it returns (the writer reuses its buffer), e.g. one that feeds two hashes side by side
 * (fingerprint.ts).
 */
export interface ByteSink {
  update(bytes: Uint8Array): unknown;
}

const HEX = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
/** Per UTF-8 byte: 0 = written as it is, else the byte after the backslash (`u` for the `\u00xx` form). */
const ESCAPE = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) ESCAPE[b] = 0x75;
ESCAPE[0x08] = 0x62; // \b
ESCAPE[0x09] = 0x74; // \t
ESCAPE[0x0a] = 0x6e; // \n
ESCAPE[0x0c] = 0x66; // \f
ESCAPE[0x0d] = 0x72; // \r
ESCAPE[0x22] = 0x22; // \"
ESCAPE[0x5c] = 0x5c; // \\

/** Code units encoded at a time. */
const SLICE = 1 << 16;
/** Code units JSON escapes: `"`, `\` and those below U+0020 (lone surrogates are handled before); global, for `exec`. */
const NEEDS_ESCAPE_ALL = /["\\\u0000-\u001f]/g;

/** A writer of JSON text into a hash, buffered (1 MiB by default). Call {@link JsonHashWriter.flush} at the end. */
export class JsonHashWriter {
  private readonly src: Buffer = Buffer.allocUnsafe(SLICE * 3);
  private out: Buffer;
  private n = 0;

  /**
   * @param hash receives the bytes, in order, in pieces of at most `bufferBytes` (a `crypto.Hash` or a {@link ByteSink}).
   * @param bufferBytes size of the output buffer; default 1 MiB, at least 16 (tests use small values, so escapes and
   *   copies cross buffer boundaries).
   */
  constructor(
    private readonly hash: ByteSink,
    bufferBytes = 1 << 20,
  ) {
    this.out = Buffer.allocUnsafe(Math.max(16, bufferBytes));
  }

  /** Writes `ascii` as it is. Only for literal punctuation (`[`, `,`, `]`, `\n`, ...): every code unit must be < 0x80. */
  raw(ascii: string): void {
    for (let i = 0; i < ascii.length; i++) this.byte(ascii.charCodeAt(i));
  }

  /** Writes the bytes of `JSON.stringify(s)` (quotes included). Memory: the two buffers, whatever the length of `s`. */
  string(s: string): void {
    if (!(s as string & { isWellFormed(): boolean }).isWellFormed()) {
      this.bytes(Buffer.from(JSON.stringify(s), 'utf8'));
      return;
    }
    this.byte(0x22);
    // The code units to escape are found by a native regex scan, and the runs between them are encoded straight into
    // the output buffer: a document has few (`title\n\ntext`: two), and the byte-by-byte escaping this replaced was
    // most of the fingerprint pass at 10M documents (issue 25, session 18).
    const find = NEEDS_ESCAPE_ALL;
    find.lastIndex = 0;
    let from = 0;
    for (;;) {
      const m = find.exec(s);
      const to = m === null ? s.length : m.index;
      if (to > from) this.plain(s, from, to);
      if (m === null) break;
      this.escape(s.charCodeAt(to));
      from = to + 1;
    }
    this.byte(0x22);
  }

  /**
   * Writes the UTF-8 of code units [from, to) of `s`, none of which needs escaping, in pieces of at most SLICE code
   * units (3 UTF-8 bytes each at most) never cut between a surrogate pair.
   */
  private plain(s: string, from: number, to: number): void {
    for (let start = from; start < to; ) {
      let end = Math.min(to, start + SLICE);
      if (end < to && (s.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
      const piece = start === 0 && end === s.length ? s : s.slice(start, end);
      const most = 3 * (end - start);
      if (most <= this.out.length) {
        if (this.out.length - this.n < most) this.flush();
        this.n += this.out.write(piece, this.n, 'utf8');
      } else this.copyOut(this.src.write(piece, 0, 'utf8'));
      start = end;
    }
  }

  /** Copies the first `len` bytes of `src` into the output buffer, flushing it as it fills (small output buffers). */
  private copyOut(len: number): void {
    for (let at = 0; at < len; ) {
      if (this.n === this.out.length) this.flush();
      const copied = this.src.copy(this.out, this.n, at, Math.min(len, at + this.out.length - this.n));
      this.n += copied;
      at += copied;
    }
  }

  /** Writes the JSON escape of code unit `c` (one {@link NEEDS_ESCAPE_ALL} matches): `\"`, `\\`, `\n`… or `\u00xx`. */
  private escape(c: number): void {
    const e = ESCAPE[c];
    this.byte(0x5c);
    this.byte(e);
    if (e === 0x75) {
      this.byte(0x30);
      this.byte(0x30);
      this.byte(HEX[c >> 4]);
      this.byte(HEX[c & 15]);
    }
  }

  private byte(b: number): void {
    if (this.n === this.out.length) this.flush();
    this.out[this.n++] = b;
  }

  /** Hands the buffered bytes to the hash. */
  flush(): void {
    if (this.n > 0) this.hash.update(this.out.subarray(0, this.n));
    this.n = 0;
  }

  private bytes(b: Buffer): void {
    this.flush();
    this.hash.update(b);
  }
}
