/**
 * The only way the sweep embeds: each distinct text once, cached on disk, in batches.
 *
 * Texts come as string arrays or as {@link TextSource}s read one text at a time (issue 25 item 1: chunks of stored
 * documents read their text from disk). Deduplication is by SHA-256 digest in a compact hash table
 * ({@link DigestTable}), so no text is held as a string beyond the batch it is embedded in.
 */
import { createHash } from 'node:crypto';
import { HarnessError } from '../errors.js';
import { embeddingCacheKey, embeddingCacheKeyOfDigest, type EmbeddingCache } from './cache.js';
import { DEFAULT_BATCH_SIZE } from './spec.js';
import { sha256Utf8 } from './hash.js';
import type { EmbeddingProvider, EmbedRole } from './provider.js';
import { createVectorMatrix, writeNormalised, type VectorMatrix, type VectorMatrixOptions, type VectorRows } from '../retrieve/vector-matrix.js';
import { createVectorFile, type VectorFile } from '../retrieve/vector-file.js';
import { copyDuplicateRows, createOrderedWriter, createPerRowWriter, type OrderedWriteOptions, type SlotRowWriter } from '../retrieve/vector-file-writer.js';

/**
 * A list of texts read one at a time: `count` texts, text i is `textAt(i)` (0 ≤ i < count). The embedding reads each
 * text once to digest it, and a cache miss's text once more when its batch is sent to the provider; nothing keeps
 * the strings. `textAt` may read from disk (a chunk of a stored document) and must return the same string each time.
 * The sweep passes one source per chunking over its chunks; {@link textSourceOf} wraps a string array.
 */
export interface TextSource {
  /** Texts in the list, ≥ 0. */
  readonly count: number;
  /** Text i, 0 ≤ i < count. */
  textAt(i: number): string;
  /**
   * Optional: where text i sits in the file it is read from, in bytes (a whole number ≥ 0; for a text store,
   * `textPosition` of src/load/text-store.ts). Texts with close positions are cheap to read one after the other. With
   * {@link EmbedTextsOptions.readWindowBytes}, the misses are embedded window by window of these positions; the
   * deduplication reads the texts in position order either way. Absent:
   * every text is as cheap as any other (held in memory), position 0.
   */
  localityAt?(i: number): number;
}

/** A {@link TextSource} over a string array (not copied; do not change the array while it is embedded). */
export function textSourceOf(texts: readonly string[]): TextSource {
  return { count: texts.length, textAt: (i) => texts[i] };
}

const asSource = (g: readonly string[] | TextSource): TextSource => (Array.isArray(g) ? textSourceOf(g as readonly string[]) : (g as TextSource));

/** What one {@link embedTexts} call did. */
export interface EmbedStats {
  /** Texts passed in (duplicates included). */
  requested: number;
  /** Distinct texts among them (by SHA-256 digest, which is exact string equality: see {@link embedTexts}). */
  distinct: number;
  /** Distinct texts found in the cache. */
  cacheHits: number;
  /** Distinct texts not found (embedded by the provider in this call). */
  cacheMisses: number;
  /** Wall time spent inside `provider.embedBatch` only, in seconds. */
  embedSeconds: number;
  /** Inputs the provider truncated at its maximum length during this call. */
  truncated: number;
}

/** Options of {@link embedTexts}. */
export interface EmbedTextsOptions {
  /** On-disk cache; without one every distinct text is embedded. */
  cache?: EmbeddingCache;
  /** Texts per `embedBatch` call, ≥ 1. Default 32. */
  batchSize?: number;
  /** Called with (distinct texts done, distinct texts in all) after the cache lookup and after each batch. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Bytes of a read window, an integer ≥ 1; default none (one window). The misses are embedded window by window of
   * their sources' {@link TextSource.localityAt} (window w holds positions [w·W, (w+1)·W)), in ascending order, and
   * longest first within a window. The texts of the misses are read when their batch is sent: ordered longest first
   * over the whole corpus, they are read in no file order, and once the file no longer fits in the page cache most
   * reads go to the disk (the 10M bench's embedding: 85 % of the main thread in `read` near its end, session 13).
   * Window by window, each window's pages are read from disk about once. Sources without `localityAt` are all in
   * window 0, so with none the order is the default one.
   */
  readWindowBytes?: number;
}

/**
 * Embeds `texts` for `role` and returns one vector per input text, aligned with `texts`.
 *
 * 1. Deduplicates: identical strings are embedded once; duplicates get the same `Float32Array` instance (treat the
 *    vectors as read-only). Texts are compared by SHA-256 digest (of the UTF-8 bytes; of 0xFF + the UTF-16LE code
 *    units for a text with a lone surrogate, which UTF-8 would turn into U+FFFD and so merge with other strings), in a
 *    table of 32-byte digests: two different strings with one digest would need a SHA-256 collision, which does not
 *    occur in practice, and the cache key already relies on it (one key, one text). The digest of an ill-formed
 *    text can equal no well-formed text's, since 0xFF never occurs in UTF-8.
 * 2. Looks the distinct texts up in `opts.cache` under `provider.cacheKey(role) + '\u0000' + sha256(text)`.
 * 3. Embeds the misses in batches of `batchSize`, longest text first (by UTF-16 code units, ties in first-seen order), which
 *    keeps similar lengths together and wastes less padding (with `readWindowBytes`, read window by read window,
 *    longest first within each); keeps up to `provider.concurrency` (default 1) calls in
 *    flight, takes their results in call order and stores each batch in the cache as soon as it is taken. On a
 *    failure the calls still in flight are awaited (results dropped) before the error is thrown; batches taken
 *    before it stay in the cache.
 *
 * Does not change `texts`. Throws `HarnessError('EMBEDDING_FAILED')` when the provider returns the wrong number of
 * vectors or a vector whose length is not `provider.dimensions` (and whatever `embedBatch` or the cache throws).
 * For chunk vectors that go into a search index, prefer {@link embedTextsToMatrices}: it holds them once.
 */
export async function embedTexts(
  provider: EmbeddingProvider,
  texts: readonly string[],
  role: EmbedRole,
  opts: EmbedTextsOptions = {},
): Promise<{ vectors: Float32Array[]; stats: EmbedStats }> {
  const distinct = dedupe([textSourceOf(texts)]);
  const { where } = distinct;
  const found: (Float32Array | undefined)[] = new Array<Float32Array | undefined>(distinct.size).fill(undefined);
  const stats = await embedDistinct(provider, distinct, role, opts, (s, v, transient) => {
    found[s] = transient ? v.slice() : v;
  });
  return { vectors: Array.from(where[0], (s) => found[s] as Float32Array), stats: { requested: texts.length, ...stats } };
}

/** Options of {@link embedTextsToMatrices}: those of {@link embedTexts} plus the matrices' shard options. */
export interface EmbedToMatrixOptions extends EmbedTextsOptions {
  matrix?: VectorMatrixOptions;
}

/**
 * Embeds several lists of texts (e.g. the chunks of each chunking of a sweep; string arrays or {@link TextSource}s)
 * for `role` straight into one {@link VectorMatrix} per list: row i of `matrices[g]` is text i of `groups[g]`, L2-normalised (duplicates included: each
 * has its own row, a copy of the first occurrence's). Each distinct text over all lists is looked up and embedded
 * once, exactly as {@link embedTexts} does (same cache keys, batches, order, stats with `requested` = all texts of
 * all lists), but no `Float32Array` is kept per text: cache rows and model outputs are written into the matrices as
 * they arrive, so the vectors are held once (the matrix the index searches; pass it to `buildVectorIndexFromMatrix`).
 * Memory: about 4 · dp per text (dp = d rounded up to 16) plus one batch of model output and its texts, plus the
 * dedupe's 56-64 bytes per text given (slot, digest, length, first position and table buckets; sized for the texts
 * given, whatever the duplicates; while a source with positions is read, 16 bytes more per text of it: its positions
 * and the radix sort's two orders), and the cache lookup's key strings while it runs.
 *
 * Throws as {@link embedTexts} does, and `HarnessError('EMBEDDING_FAILED')` naming the text when a vector (from the
 * model or the cache) holds NaN/Infinity.
 */
export async function embedTextsToMatrices(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[] | TextSource)[],
  role: EmbedRole,
  opts: EmbedToMatrixOptions = {},
): Promise<{ matrices: VectorMatrix[]; stats: EmbedStats }> {
  checkBatchSize(opts.batchSize);
  const { rows, stats } = await embedTextsToRows(provider, groups, role, opts, (n, d) => createVectorMatrix(n, d, opts.matrix));
  return { matrices: rows, stats };
}

/** Options of {@link embedTextsToFiles}: those of {@link embedTexts} plus how the rows reach the files. */
export interface EmbedToFilesOptions extends EmbedTextsOptions {
  /**
   * The writer: the in-order writer's options (default: {@link createOrderedWriter}'s defaults, 64 MiB regions and
   * 64 MiB of buffers), or `'per-row'` for the writer of sessions 8-11 (one positioned write per row as the vectors
   * arrive, duplicates copied after; kept as the reference of the differential test and the bench). Both write the
   * same bytes.
   */
  vectorWrite?: OrderedWriteOptions | 'per-row';
}

/**
 * {@link embedTextsToMatrices} with the rows written to files instead of memory (issue 25 item 1): group g's rows go
 * to a new {@link VectorFile} at `files[g]` (created or truncated; the caller names it and removes it), with the same
 * normalisation, so the files hold exactly the bytes the matrices' rows would. The same lookups, batches and stats.
 * The vectors arrive in the embedding's order (cache hits first-seen, misses longest first); the in-order writer
 * (src/retrieve/vector-file-writer.ts) sends each, with its duplicates' rows, through per-region buffers and scratch
 * parts and writes every file region by region in order (docs/scale.md "Vector files written in order").
 * Memory: one batch of model output and its texts, the writer's buffers (about 132 MiB at most by default) and its
 * duplicate index (4 bytes a row), the dedupe's digests (as for {@link embedTextsToMatrices}).
 * On failure every file and scratch part is removed before the error is thrown. Throws as
 * {@link embedTextsToMatrices} does, and `HarnessError('EMBEDDING_FAILED')` naming a file that cannot be created or
 * written (a full disk among them).
 */
export async function embedTextsToFiles(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[] | TextSource)[],
  files: readonly string[],
  role: EmbedRole,
  opts: EmbedToFilesOptions = {},
): Promise<{ files: VectorFile[]; stats: EmbedStats }> {
  checkBatchSize(opts.batchSize);
  if (files.length !== groups.length) throw new Error(`embedTextsToFiles: ${files.length} files for ${groups.length} groups`);
  const made: VectorFile[] = [];
  let writer: SlotRowWriter | undefined;
  try {
    const distinct = dedupe(groups.map(asSource));
    const { where, firstGroup, firstRow } = distinct;
    const d = provider.dimensions;
    for (let g = 0; g < where.length; g++) made.push(createVectorFile(files[g], where[g].length, d));
    const layout = { slots: distinct.size, where, firstGroup, firstRow };
    const mode = opts.vectorWrite;
    const w = (writer = mode === 'per-row' ? createPerRowWriter(made, layout) : createOrderedWriter(made, layout, mode));
    const row = new Float32Array(made.length > 0 ? made[0].dp : 16);
    const stats = await embedDistinct(provider, distinct, role, opts, (s, v) => {
      row.fill(0);
      // the text that names the vector in an error is read only when there is one
      // the label names the vector only in an error: built (and the text read) only when there is one
      writeNormalised(row, v, d, writable(v, d) ? 'vector' : `embedding of ${JSON.stringify(preview(distinct.textOf(s)))}`);
      w.put(s, row);
    });
    w.finish();
    return { files: made, stats: { requested: where.reduce((a, x) => a + x.length, 0), ...stats } };
  } catch (e) {
    writer?.discard();
    for (const f of made) f.remove();
    throw e;
  }
}

/** The body of {@link embedTextsToMatrices} over any row store: `create(n, d, g)` makes group g's store. */
async function embedTextsToRows<T extends VectorRows>(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[] | TextSource)[],
  role: EmbedRole,
  opts: EmbedTextsOptions,
  create: (n: number, d: number, g: number) => T,
): Promise<{ rows: T[]; stats: EmbedStats }> {
  const distinct = dedupe(groups.map(asSource));
  const { where, firstGroup, firstRow } = distinct;
  const matrices = where.map((w, i) => create(w.length, provider.dimensions, i));
  // the first (group, row) of each distinct text: where its vector is written; the other occurrences copy it
  const d = provider.dimensions;
  const stats = await embedDistinct(provider, distinct, role, opts, (s, v) => {
    // the text that names the vector in an error is read only when there is one
    matrices[firstGroup[s]].setRow(firstRow[s], v, writable(v, d) ? undefined : `embedding of ${JSON.stringify(preview(distinct.textOf(s)))}`);
  });
  copyDuplicateRows(matrices, distinct);
  return { rows: matrices, stats: { requested: where.reduce((a, w) => a + w.length, 0), ...stats } };
}

/** True when `setRow` will accept `v`: length d and every value finite (writeNormalised's checks). */
function writable(v: ArrayLike<number>, d: number): boolean {
  if (v.length !== d) return false;
  for (let j = 0; j < d; j++) if (!Number.isFinite(v[j])) return false;
  return true;
}

/** {@link embedTextsToMatrices} for one list (strings or a {@link TextSource}): `{ matrix, stats }`, row i of `matrix` is text i. */
export async function embedTextsToMatrix(
  provider: EmbeddingProvider,
  texts: readonly string[] | TextSource,
  role: EmbedRole,
  opts: EmbedToMatrixOptions = {},
): Promise<{ matrix: VectorMatrix; stats: EmbedStats }> {
  const { matrices, stats } = await embedTextsToMatrices(provider, [texts], role, opts);
  return { matrix: matrices[0], stats };
}

const preview = (t: string): string => (t.length <= 60 ? t : `${t.slice(0, 60)}…`);

function checkBatchSize(batchSize: number | undefined): number {
  const b = batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(b) || b < 1) {
    throw new HarnessError('CONFIG_INVALID', `batchSize (${String(b)}) must be a whole number ≥ 1`, {
      location: { path: 'embeddings.batchSize' },
      remedy: 'use a batch size such as 16 or 32',
    });
  }
  return b;
}

/**
 * A set of 32-byte digests (SHA-256) numbered 0, 1, 2, ... in insertion order: open addressing with linear probing
 * on an `Int32Array` of slot numbers (power-of-two capacity, kept at most half full, doubled when it would be more),
 * the digests side by side in one `Uint8Array`. The bucket is the digest's first four bytes (uniform for SHA-256).
 * Memory: 32 bytes a digest plus 8-16 bytes of table; no JavaScript object per digest. Used to deduplicate texts by
 * digest without keeping the texts (issue 25 item 1).
 */
export class DigestTable {
  private table: Int32Array;
  private mask: number;
  private digests: Uint8Array;
  private n = 0;

  /** `expected`: digests to make room for at once (≥ 0; the table grows past it as needed). */
  constructor(expected = 0) {
    let cap = 16;
    while (cap < 2 * expected) cap *= 2;
    this.table = new Int32Array(cap).fill(-1);
    this.mask = cap - 1;
    this.digests = new Uint8Array(32 * Math.max(8, expected));
  }

  /** Digests held. */
  get size(): number {
    return this.n;
  }

  /** Digest number s (0 ≤ s < size): a 32-byte view, valid until the next {@link DigestTable.add}. */
  digest(s: number): Uint8Array {
    return this.digests.subarray(s * 32, s * 32 + 32);
  }

  /**
   * The number of `digest` (its first 32 bytes): the existing one when it was added before, else the next number
   * (`size` before the call), and it is added. Throws a RangeError when `digest` is shorter than 32 bytes.
   */
  add(digest: Uint8Array): number {
    if (digest.length < 32) throw new RangeError(`DigestTable.add: a digest of ${digest.length} bytes (32 needed)`);
    let b = (digest[0] | (digest[1] << 8) | (digest[2] << 16) | (digest[3] << 24)) & this.mask;
    for (;;) {
      const s = this.table[b];
      if (s === -1) break;
      if (this.equals(s, digest)) return s;
      b = (b + 1) & this.mask;
    }
    const s = this.n++;
    if (this.digests.length < this.n * 32) {
      const grown = new Uint8Array(this.digests.length * 2);
      grown.set(this.digests);
      this.digests = grown;
    }
    this.digests.set(digest.subarray(0, 32), s * 32);
    if (2 * this.n > this.table.length) this.rehash(this.table.length * 2);
    else this.table[b] = s;
    return s;
  }

  private equals(s: number, digest: Uint8Array): boolean {
    const o = s * 32;
    for (let j = 0; j < 32; j++) if (this.digests[o + j] !== digest[j]) return false;
    return true;
  }

  /** A table of `cap` buckets holding digests 0..n-1. */
  private rehash(cap: number): void {
    this.table = new Int32Array(cap).fill(-1);
    this.mask = cap - 1;
    const d = this.digests;
    for (let s = 0; s < this.n; s++) {
      const o = s * 32;
      let b = (d[o] | (d[o + 1] << 8) | (d[o + 2] << 16) | (d[o + 3] << 24)) & this.mask;
      while (this.table[b] !== -1) b = (b + 1) & this.mask;
      this.table[b] = s;
    }
  }
}

/** The distinct texts of some sources, held as digests and positions, not strings (see {@link dedupe}). */
interface Distinct {
  /** Distinct texts. */
  size: number;
  /** Per source, the slot (distinct number) of each of its texts. */
  where: Int32Array[];
  /** Per slot, its text's length in UTF-16 code units. */
  lengths: Int32Array;
  /** Per slot, the source and position of its first occurrence. */
  firstGroup: Int32Array;
  firstRow: Int32Array;
  /** Slot s's text, read again from its first occurrence. */
  textOf(s: number): string;
  /** Slot s's first occurrence's {@link TextSource.localityAt}, 0 when its source has none. */
  localityOf(s: number): number;
  /** True when some source has {@link TextSource.localityAt}. */
  located: boolean;
  /** Slot s's SHA-256 of the UTF-8 text (the cache key's digest, {@link embeddingCacheKey}). */
  cacheDigest(s: number): Uint8Array;
}

/** sha256 of `text` as UTF-8: what {@link embeddingCacheKey} hashes. */
const utf8Digest = sha256Utf8;
/** True when `text` has no lone surrogate (String.prototype.isWellFormed, Node ≥ 20; ES2024, not in our lib). */
const wellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();
const ILL_FORMED_TAG = Buffer.from([0xff]);

/**
 * The identity under which the embedding deduplicates `text` (see {@link embedTexts}): sha256 of its UTF-8 for a
 * well-formed text (then also its cache digest), sha256(0xFF ‖ UTF-16LE) for one with a lone surrogate. 32 bytes.
 */
function textIdentity(text: string): Buffer {
  return wellFormed(text) ? utf8Digest(text) : createHash('sha256').update(ILL_FORMED_TAG).update(text, 'utf16le').digest();
}

/**
 * Distinct texts by digest, numbered 0, 1, 2, … in first-seen order: the embedding's deduplication
 * ({@link textIdentity} in a {@link DigestTable}), with each text's cache digest (sha256 of its UTF-8; kept apart
 * only for the rare text with a lone surrogate, whose identity differs). No string is kept. Used by the embedding and
 * by `validate`'s estimate (run/plan.ts), so both count the same texts.
 */
export class TextDigests {
  private readonly table: DigestTable;
  private readonly illFormed = new Map<number, Uint8Array>();

  /** `expected`: texts to make room for at once (≥ 0). */
  constructor(expected = 0) {
    this.table = new DigestTable(expected);
  }

  /** Distinct texts added. */
  get size(): number {
    return this.table.size;
  }

  /** The number of `text`: an earlier text's when equal to it, else `size` before the call (it is added). */
  add(text: string): number {
    const ok = wellFormed(text);
    const before = this.table.size;
    const s = this.table.add(ok ? utf8Digest(text) : textIdentity(text));
    if (s === before && !ok) this.illFormed.set(s, utf8Digest(text));
    return s;
  }

  /** Text s's SHA-256 of its UTF-8: the digest in its cache key ({@link embeddingCacheKeyOfDigest}). */
  cacheDigest(s: number): Uint8Array {
    return this.illFormed.get(s) ?? this.table.digest(s);
  }
}

/**
 * The distinct texts over all sources in first-seen order (source by source; within a source text by text, or, for a
 * source with {@link TextSource.localityAt}, in ascending position, ties by index: {@link rowsByPosition}), each text
 * read once. Reading a text store's chunks in position order walks the file forwards, so its read-ahead serves many
 * texts per read; in index order (documents sorted by id, the store in load order) every document was a jump through
 * the file (the 10M bench's embedding set-up: `read` 22-25 % of the main thread, session 13). The order changes only
 * which occurrence counts as first; every text gets its digest either way.
 * Identity is the digest described in {@link embedTexts}: sha256(UTF-8) for a well-formed text (also its cache
 * digest), sha256(0xFF ‖ UTF-16LE) for one with a lone surrogate (whose cache digest, sha256 of its UTF-8 with U+FFFD
 * in place of the surrogate, is kept apart: such texts are rare).
 */
function dedupe(sources: readonly TextSource[]): Distinct {
  const total = sources.reduce((a, src) => a + src.count, 0);
  const digests = new TextDigests(total);
  const lengths = new Int32Array(total);
  const firstGroup = new Int32Array(total);
  const firstRow = new Int32Array(total);
  const where = sources.map((src, g) => {
    const w = new Int32Array(src.count);
    const order = src.localityAt === undefined ? undefined : rowsByPosition(src.count, (i) => src.localityAt!(i));
    for (let k = 0; k < src.count; k++) {
      const i = order === undefined ? k : order[k];
      const text = src.textAt(i);
      const before = digests.size;
      const s = digests.add(text);
      if (s === before) {
        lengths[s] = text.length;
        firstGroup[s] = g;
        firstRow[s] = i;
      }
      w[i] = s;
    }
    return w;
  });
  return {
    size: digests.size,
    where,
    lengths,
    firstGroup,
    firstRow,
    textOf: (s) => sources[firstGroup[s]].textAt(firstRow[s]),
    localityOf: (s) => sources[firstGroup[s]].localityAt?.(firstRow[s]) ?? 0,
    located: sources.some((src) => src.localityAt !== undefined),
    cacheDigest: (s) => digests.cacheDigest(s),
  };
}

/**
 * The indices 0..n−1 in ascending `positionAt(i)`, ties in ascending index: the order of
 * `sort((a, b) => positionAt(a) - positionAt(b) || a - b)`, by a stable LSD radix sort over 16-bit digits of the
 * positions (O(n) per digit; three digits for positions below 2^48, 256 TB) instead of a comparison sort; undefined
 * when the positions are already in order (nothing to reorder). A comparison sort above 2^48. Exported for the
 * differential test.
 * @throws RangeError when a position is not a whole number ≥ 0, naming the index and the value.
 */
export function rowsByPosition(n: number, positionAt: (i: number) => number): Int32Array | undefined {
  const positions = new Float64Array(n);
  let sorted = true;
  let largest = 0;
  for (let i = 0; i < n; i++) {
    const p = positionAt(i);
    if (!Number.isInteger(p) || p < 0) throw new RangeError(`text ${i}: position ${p} is not a whole number >= 0`);
    positions[i] = p;
    if (i > 0 && p < positions[i - 1]) sorted = false;
    if (p > largest) largest = p;
  }
  if (sorted) return undefined;
  let order = Int32Array.from({ length: n }, (_, i) => i);
  if (largest >= 2 ** 48) return order.sort((a, b) => positions[a] - positions[b] || a - b);
  let next = new Int32Array(n);
  const counts = new Int32Array(65537);
  for (let shift = 1; shift < 2 ** 48 && shift <= largest; shift *= 65536) {
    counts.fill(0);
    for (let k = 0; k < n; k++) counts[(Math.floor(positions[order[k]] / shift) % 65536) + 1]++;
    for (let d = 1; d < counts.length; d++) counts[d] += counts[d - 1];
    for (let k = 0; k < n; k++) {
      const i = order[k];
      next[counts[Math.floor(positions[i] / shift) % 65536]++] = i;
    }
    [order, next] = [next, order];
  }
  return order;
}

/**
 * Step 2 of {@link embedDistinct}: looks every distinct text up in `cache` under
 * {@link embeddingCacheKey}`(providerKey, text)`, by its cache digest ({@link EmbeddingCache.visitDigests}: no key
 * string is built), and calls `sink(s, vector, true)` and sets `have[s] = 1` for each hit of length `dimensions`.
 * {@link LOOKUP_SLICE} digests a call.
 */
function lookUp(
  cache: EmbeddingCache,
  providerKey: string,
  digestOf: (s: number) => Uint8Array,
  total: number,
  dimensions: number,
  have: Uint8Array,
  sink: (s: number, v: Float32Array, transient: boolean) => void,
): void {
  for (let from = 0; from < total; from += LOOKUP_SLICE) {
    cache.visitDigests(providerKey, Math.min(LOOKUP_SLICE, total - from), (j) => digestOf(from + j), (j, v) => {
      if (v.length !== dimensions) return; // another model's vector under a colliding key: a miss
      sink(from + j, v, true);
      have[from + j] = 1;
    });
  }
}

/**
 * Digests per {@link EmbeddingCache.visitDigests} call of the lookup: the call holds a map over them (about 100 bytes
 * a digest; through `visit`, with key strings, it was about 350), so the lookup's memory stays bounded whatever the
 * corpus (one call over 1.76 million keys held about 0.6 GB, and past 2^24 entries the map would not be built at all).
 * Each call is its own transaction and clock tick: the rows a lookup serves are marked recent slice by slice, which
 * changes only the order the LRU prunes them in among themselves.
 */
const LOOKUP_SLICE = 1 << 16;

/**
 * The slots s with `have[s] === 0` (the cache's misses), longest text first by `lengths` (UTF-16 code units), ties in
 * ascending slot order: the order `sort((a, b) => lengths[b] - lengths[a] || a - b)` gives, computed by a stable
 * counting sort over the lengths in O(slots + longest length) instead of a comparison sort: 17.6 million misses (the
 * 10M bench's) of lengths 200-2,000 take 0.61 CPU s instead of 7.36 through a JavaScript comparator, on the main thread. Falls back to that
 * comparison sort when the longest length exceeds {@link COUNTING_SORT_MAX_LENGTH} (its counts would not be small).
 *
 * With `windows` (per slot, its read window: an integer ≥ 0, see {@link EmbedTextsOptions.readWindowBytes}), the
 * misses are ordered by window first, ascending, then as above within a window: the order of
 * `sort((a, b) => windows[a] - windows[b] || lengths[b] - lengths[a] || a - b)`, by a second stable counting sort over
 * the windows (a comparison sort above {@link COUNTING_SORT_MAX_LENGTH} windows). Exported for the differential test.
 * @throws RangeError when a miss's window is not an integer ≥ 0.
 */
export function slotsLongestFirst(have: Uint8Array, lengths: Int32Array, windows?: Int32Array): Int32Array {
  let n = 0;
  let longest = 0;
  for (let s = 0; s < have.length; s++) {
    if (have[s] !== 0) continue;
    n++;
    if (lengths[s] > longest) longest = lengths[s];
  }
  const out = new Int32Array(n);
  if (longest > COUNTING_SORT_MAX_LENGTH) {
    let k = 0;
    for (let s = 0; s < have.length; s++) if (have[s] === 0) out[k++] = s;
    out.sort((a, b) => lengths[b] - lengths[a] || a - b);
  } else {
    // start[L] = where the slots of length L begin: after every longer one
    const start = new Int32Array(longest + 2);
    for (let s = 0; s < have.length; s++) if (have[s] === 0) start[longest - lengths[s] + 1]++;
    for (let i = 1; i < start.length; i++) start[i] += start[i - 1];
    for (let s = 0; s < have.length; s++) if (have[s] === 0) out[start[longest - lengths[s]]++] = s;
  }
  if (windows === undefined) return out;
  let last = 0;
  for (let k = 0; k < n; k++) {
    const w = windows[out[k]];
    if (!(w >= 0) || !Number.isInteger(w)) throw new RangeError(`slot ${out[k]}: read window ${w} is not an integer >= 0`);
    if (w > last) last = w;
  }
  if (last === 0) return out;
  if (last > COUNTING_SORT_MAX_LENGTH) return out.sort((a, b) => windows[a] - windows[b] || lengths[b] - lengths[a] || a - b);
  // stable: within a window the slots keep the order above
  const at = new Int32Array(last + 2);
  for (let k = 0; k < n; k++) at[windows[out[k]] + 1]++;
  for (let i = 1; i < at.length; i++) at[i] += at[i - 1];
  const byWindow = new Int32Array(n);
  for (let k = 0; k < n; k++) byWindow[at[windows[out[k]]]++] = out[k];
  return byWindow;
}

/**
 * Per slot, the read window of a miss: ⌊{@link Distinct.localityOf}(s) / `windowBytes`⌋, at most 2^31 − 1 (0 for a
 * hit); undefined when there is no window to order by (no `windowBytes`, or no source with `localityAt`).
 * @throws HarnessError('CONFIG_INVALID') for a `windowBytes` that is not an integer ≥ 1.
 */
function readWindows(distinct: Distinct, have: Uint8Array, windowBytes: number | undefined): Int32Array | undefined {
  if (windowBytes === undefined || !distinct.located) return undefined;
  if (!Number.isInteger(windowBytes) || windowBytes < 1) {
    throw new HarnessError('CONFIG_INVALID', `embedding readWindowBytes (${windowBytes}) must be a whole number >= 1`, {
      remedy: 'pass a window such as 268435456 (256 MiB), or leave it out for one window',
    });
  }
  const windows = new Int32Array(distinct.size);
  for (let s = 0; s < windows.length; s++) {
    if (have[s] !== 0) continue;
    // every position was checked by rowsByPosition when the deduplication read the texts
    windows[s] = Math.min(0x7fffffff, Math.floor(distinct.localityOf(s) / windowBytes));
  }
  return windows;
}

/** Longest text length (code units) up to which {@link slotsLongestFirst} counts: 2^24 (a 64 MiB table at most). */
export const COUNTING_SORT_MAX_LENGTH = 1 << 24;

/**
 * Steps 2 and 3 of {@link embedTexts} over distinct texts: calls `sink(s, vector, transient)` once per distinct text
 * s, from the cache (transient: a view valid only during the call) or from the model (kept by no one else). A miss's
 * text is read (`distinct.textOf`) when its batch is sent.
 */
async function embedDistinct(
  provider: EmbeddingProvider,
  distinct: Distinct,
  role: EmbedRole,
  opts: EmbedTextsOptions,
  sink: (s: number, v: Float32Array, transient: boolean) => void,
): Promise<Omit<EmbedStats, 'requested'>> {
  const batchSize = checkBatchSize(opts.batchSize);
  const total = distinct.size;
  const have = new Uint8Array(total);

  // 2. cache lookup
  const providerKey = provider.cacheKey(role);
  const keyOf = (s: number): string => embeddingCacheKeyOfDigest(providerKey, distinct.cacheDigest(s));
  // A cache that never stored a vector of this provider key holds none of these texts: skip building and looking up
  // every key (17.6 million at 10M documents, a few µs each on the main thread).
  if (opts.cache && total > 0 && opts.cache.hasModel(providerKey)) {
    lookUp(opts.cache, providerKey, (s) => distinct.cacheDigest(s), total, provider.dimensions, have, sink);
  }
  const missing = slotsLongestFirst(have, distinct.lengths, readWindows(distinct, have, opts.readWindowBytes));
  const cacheHits = total - missing.length;
  opts.onProgress?.(cacheHits, total);

  // 3. embed the misses, longest first (ordered above)
  const truncatedBefore = provider.truncatedCount();
  // Up to provider.concurrency calls in flight; results are taken in call order, so cache writes, sinks and progress
  // happen in the same order whatever the width. embedMs counts the wall time while at least one call is in flight.
  const declared = provider.concurrency ?? 1;
  const width = Number.isFinite(declared) ? Math.max(1, Math.floor(declared)) : declared === Infinity ? missing.length : 1;
  let embedMs = 0;
  let inFlight = 0;
  let busySince = 0;
  let done = cacheHits;
  let next = 0;
  const pending: { part: number[]; result: Promise<Float32Array[]> }[] = [];
  const start = (): void => {
    const part = Array.from(missing.subarray(next, next + batchSize));
    next += part.length;
    if (inFlight++ === 0) busySince = performance.now();
    let call: Promise<Float32Array[]>;
    try {
      // Promise.resolve: a JavaScript provider may return the array itself, as `await` always accepted.
      call = Promise.resolve(provider.embedBatch(part.map((s) => distinct.textOf(s)), role));
    } catch (e) {
      call = Promise.reject(e);
    }
    const result = call.finally(() => {
      if (--inFlight === 0) embedMs += performance.now() - busySince;
    });
    result.catch(() => undefined); // awaited below in order; this only keeps a later call's failure from being unhandled
    pending.push({ part, result });
  };
  try {
    while (next < missing.length || pending.length > 0) {
      while (pending.length < width && next < missing.length) start();
      const { part, result } = pending.shift()!;
      const vecs = await result;
      if (vecs.length !== part.length) {
        throw new HarnessError(
          'EMBEDDING_FAILED',
          `${provider.name} returned ${vecs.length} vectors for a batch of ${part.length} texts`,
          { remedy: 'this is a bug in the embedding provider; report it with the model name' },
        );
      }
      vecs.forEach((v) => {
        if (v.length !== provider.dimensions) {
          throw new HarnessError(
            'EMBEDDING_FAILED',
            `${provider.name} returned a vector of length ${v.length}, expected ${provider.dimensions}`,
            { remedy: 'check that the model folder holds one model (config.json hidden_size matches the ONNX output)' },
          );
        }
      });
      opts.cache?.put(part.map((s, j) => [keyOf(s), vecs[j]] as const));
      vecs.forEach((v, j) => sink(part[j], v, false));
      done += part.length;
      opts.onProgress?.(done, total);
    }
  } catch (e) {
    // Nothing keeps running after we return: wait for the calls still in flight (their results are dropped).
    await Promise.allSettled(pending.map((p) => p.result));
    throw e;
  }

  return {
    distinct: total,
    cacheHits,
    cacheMisses: missing.length,
    embedSeconds: embedMs / 1000,
    truncated: provider.truncatedCount() - truncatedBefore,
  };
}
