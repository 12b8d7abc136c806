/**
 * Feeding a hash the bytes of `JSON.stringify(value)` without building that string.
 *
 * Why: the dataset fingerprint is sha256 over one JSON record per document (`["<id>","<text>"]\n`). Building each
 * record with `JSON.stringify` allocates as many bytes of short-lived strings as the corpus holds (1.1 GB for a
 * million documents), and in V8 every young-generation collection costs more the larger the old generation already is,
 * so that garbage made the fingerprint grow faster than the corpus (1.2 s at 200k documents, 7.5 s at 1M, measured).
 * Here each string is encoded to UTF-8, 64K code units at a time, into one reused buffer and escaped byte by byte into
 * a second one (1 MiB), which is handed to the hash when full: no allocation per document and bounded memory for any
 * document length, the same bytes as before, so fingerprints are unchanged.
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
/** A code unit JSON escapes: `"`, `\` or one below U+0020 (lone surrogates are handled before). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

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
    // Most texts have nothing to escape: found by one native scan, they are encoded straight into the output buffer
    // (the byte-by-byte escaping below was most of the fingerprint pass at 10M documents; issue 25, session 18).
    const plain = !NEEDS_ESCAPE.test(s);
    // Encode in pieces of at most SLICE code units (3 UTF-8 bytes each at most), never between a surrogate pair.
    for (let start = 0; start < s.length; ) {
      let end = Math.min(s.length, start + SLICE);
      if (end < s.length && (s.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
      const piece = start === 0 && end === s.length ? s : s.slice(start, end);
      if (plain && this.out.length >= 3 * (end - start)) {
        if (this.out.length - this.n < 3 * (end - start)) this.flush();
        this.n += this.out.write(piece, this.n, 'utf8');
      } else this.escaped(this.src.write(piece, 0, 'utf8'));
      start = end;
    }
    this.byte(0x22);
  }

  /** Escapes the first `len` bytes of `src` into the output buffer, flushing it as it fills. */
  private escaped(len: number): void {
    const src = this.src;
    let out = this.out;
    let n = this.n;
    let run = 0; // start of the bytes not yet copied
    for (let i = 0; i <= len; i++) {
      const e = i < len ? ESCAPE[src[i]] : 0xff; // 0xff: copy what is left
      if (e === 0) continue;
      while (run < i) {
        if (n === out.length) {
          this.n = n;
          this.flush();
          out = this.out;
          n = 0;
        }
        const copied = src.copy(out, n, run, Math.min(i, run + out.length - n));
        n += copied;
        run += copied;
      }
      if (i === len) break;
      run = i + 1;
      if (n + 6 > out.length) {
        this.n = n;
        this.flush();
        n = 0;
      }
      out[n++] = 0x5c;
      out[n++] = e;
      if (e === 0x75) {
        const b = src[i];
        out[n++] = 0x30;
        out[n++] = 0x30;
        out[n++] = HEX[b >> 4];
        out[n++] = HEX[b & 15];
      }
    }
    this.n = n;
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
