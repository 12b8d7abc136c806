/**
 * Checkpoints: finished rankings kept under `<cacheDir>/checkpoints/`, so a re-run after a kill, Ctrl-C or an
 * out-of-memory stop repeats no finished stage (issue "nothing lost").
 *
 * A checkpoint holds one ranking unit: the lists of every scored question (in question order) at some depth, plus the
 * timings measured when it was computed. It is keyed by the SHA-256 of everything that determines the lists: the
 * checkpoint format, the ranking inputs ({@link rankingInputsKey}: the corpus fingerprint and the scored questions' ids
 * and texts, not their grades, so adding labels repeats only scoring), the scored question ids, the chunking, and the unit's own parameters
 * (BM25 k1/b and analyser; the embedding model's cache keys; fusion; the retriever module's file hash and options; the
 * run file's hash; the reranker's cache key and depth). A stored ranking at depth D serves any depth ≤ D (every depth is
 * a prefix). Files are written to a temporary name and renamed, so a kill never leaves a half-written checkpoint; an
 * unreadable checkpoint is ignored (and recomputed), never trusted.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, existsSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Chunk, ChunkingSpec, Doc, Hit } from '../types.js';
import { describeShort, rankingListsProblem } from './verify.js';
import { removeDeadTemporaries, writeThenRename } from '../store/temp.js';
import { chunkOf, textLength } from '../load/text-store.js';
import { isOrdinalId } from './chunk-ids.js';
import { IdIndex, type IdLookup } from '../id-index.js';

/** Bumped whenever the chunker (src/chunk/) cuts differently: part of every chunking checkpoint key. */
export const CHUNKER_VERSION = 1;

/**
 * First bytes of a chunking checkpoint file (`<key>.chunks`). Format 2 adds the key and a SHA-256 of the fields to the
 * header; a format-1 file (`RSCHUNK1`) is recomputed once.
 */
const CHUNKS_MAGIC = 'RSCHUNK2';
/** Bytes before the fields: magic (8), chunk count (uint32 LE), the key (32 raw bytes), SHA-256 of the fields (32). */
const CHUNKS_HEADER = 8 + 4 + 32 + 32;
/** Format of a ranking checkpoint file: line 1 `{"format":2,"key":..,"sha256":..}`, line 2 the body JSON. */
const FILE_FORMAT = 2;
/** Int32 fields per chunk in a chunking checkpoint: doc index, ordinal, start, end, tokens. */
const CHUNK_FIELDS = 5;

/**
 * The checkpoint key of a chunking: the corpus fingerprint (src/load/dataset.ts `fingerprintCorpus`: documents only,
 * so labels do not enter), the documents' id order (the file refers to documents by position; the fingerprint sorts
 * them), the chunking spec, the tokenizer name and {@link CHUNKER_VERSION}.
 */
export function chunkingCheckpointKey(fingerprint: string, docs: readonly Doc[], spec: ChunkingSpec, tokenizerName: string): string {
  const order = createHash('sha256');
  for (const d of docs) order.update(`${d.id}\n`);
  return CheckpointStore.key({
    kind: 'chunking',
    dataset: fingerprint,
    docOrder: order.digest('hex'),
    size: spec.size,
    overlap: spec.overlap,
    tokenizer: tokenizerName,
    chunker: CHUNKER_VERSION,
  });
}

/**
 * Bumped whenever what a ranking unit computes, or what its key is made of, changes meaning. 2: keys hold
 * {@link rankingInputsKey} and the corpus fingerprint instead of the dataset fingerprint (which includes the grades),
 * so labelling no longer invalidates rankings (issue 20).
 */
export const CHECKPOINT_FORMAT = 2;

/**
 * What ranking units depend on from the dataset: sha256 (hex) over the corpus fingerprint and, per scored question in
 * order, its id and text (`JSON.stringify([id, text])` lines). Grades, evidence and tags do not enter: rankings do not
 * depend on them. (Which questions are scored does: a question that gains its first label joins the lists, and the
 * units are computed again.)
 */
export function rankingInputsKey(corpusFingerprint: string, questions: readonly { id: string; text: string }[]): string {
  const h = createHash('sha256');
  h.update(`corpus ${corpusFingerprint}\n`);
  for (const q of questions) h.update(`${JSON.stringify([q.id, q.text])}\n`);
  return h.digest('hex');
}

/** A stored ranking unit. */
export interface Checkpoint {
  /** One list per scored question, in question order, each cut to `depth`. */
  lists: Hit[][];
  depth: number;
  buildSeconds: number;
  queryMs: number;
  /** Anything else the unit reports (manifest details). */
  info?: Record<string, unknown>;
}

/** A folder of checkpoints. `enabled: false` makes every lookup miss and every write a no-op. */
export class CheckpointStore {
  readonly dir: string;
  readonly enabled: boolean;
  /** Keys served from disk during this run, and keys written. */
  readonly hits: string[] = [];
  readonly writes: string[] = [];
  /** Files found altered, damaged, misplaced or inconsistent during this run (removed, then recomputed). */
  readonly discarded: string[] = [];
  private readonly warn: (message: string) => void;

  /**
   * @param cacheDir the sweep's `cacheDir`; checkpoints live in its `checkpoints/` folder.
   * @param enabled false: every lookup misses and every write is a no-op (`--no-resume`).
   * @param warn receives one message per discarded file (naming it); default: ignored.
   */
  constructor(cacheDir: string, enabled = true, warn: (message: string) => void = () => {}) {
    this.dir = path.join(path.resolve(cacheDir), 'checkpoints');
    this.enabled = enabled;
    this.warn = warn;
    // A killed run's half-written checkpoints (`*.tmp-<pid>-<ms>` of a process that is gone) are removed.
    if (enabled) this.removedTemporaries = removeDeadTemporaries(this.dir);
  }

  /** Temporaries of dead runs removed when this store was opened. */
  readonly removedTemporaries: string[] = [];

  /** The key of a unit: sha256 over the JSON of its parts (object keys sorted). */
  static key(parts: Record<string, unknown>): string {
    return createHash('sha256')
      .update(JSON.stringify(sortKeys({ format: CHECKPOINT_FORMAT, ...parts })))
      .digest('hex');
  }

  /**
   * The stored unit for `key` when it exists, is intact and reaches `depth`; otherwise undefined. Intact means: the
   * file's header names `key` (a file copied or renamed from another unit is caught), the SHA-256 of its body matches
   * the header, and its lists pass {@link rankingListsProblem} (one list per question, at most the stored depth, ids the
   * unit knows, finite scores, the tie rule's order). A file that fails is removed, named in a warning (the store's
   * `warn`) and recomputed by the caller; a file of the earlier format (1, no content hash) is recomputed once.
   * `expect` defaults to no question-count or id check (the lists' shape and order are still checked).
   */
  get(key: string, depth: number, expect?: { questions: number; isKnown?: (id: string) => boolean }): Checkpoint | undefined {
    if (!this.enabled) return undefined;
    const file = path.join(this.dir, `${key}.json`);
    if (!existsSync(file)) return undefined;
    const r = this.read(file, key, depth, expect);
    if (typeof r === 'string') {
      this.discard(file, r);
      return undefined;
    }
    if (r) this.hits.push(key);
    return r;
  }

  /**
   * What is wrong with the ranking checkpoint `file` (named `<key>.json`), or null when it is intact: the checks of
   * {@link get} without a question count or id check, and without removing anything (for `doctor`).
   */
  inspect(file: string): string | null {
    const r = this.read(file, path.basename(file, '.json'), 0, undefined);
    return typeof r === 'string' ? r : null;
  }

  /** The checkpoint, undefined when intact but shallower than `depth`, or the problem found. */
  private read(file: string, key: string, depth: number, expect: { questions: number; isKnown?: (id: string) => boolean } | undefined): Checkpoint | string | undefined {
    let problem: string;
    try {
      const buf = readFileSync(file);
      const nl = buf.indexOf(0x0a);
      const header = nl < 0 ? undefined : (parseJson(buf.toString('utf8', 0, nl)) as { format?: unknown; key?: unknown; sha256?: unknown } | undefined);
      if (!header || header.format !== FILE_FORMAT) problem = 'was written by an earlier release (no content hash): recomputed once';
      else if (header.key !== key) problem = `belongs to another unit (its header names ${String(header.key).slice(0, 16)}...)`;
      else if (createHash('sha256').update(buf.subarray(nl + 1)).digest('hex') !== header.sha256) problem = 'does not match its content hash (altered or damaged)';
      else {
        const c = parseJson(buf.toString('utf8', nl + 1)) as { lists?: unknown; depth?: unknown; buildSeconds?: unknown; queryMs?: unknown; info?: unknown } | undefined;
        if (!c || typeof c !== 'object') problem = 'is not JSON';
        else if (typeof c.depth !== 'number' || !Number.isInteger(c.depth) || c.depth < 0) problem = `has depth ${describeShort(c.depth)}`;
        else if (!isFiniteNonNegative(c.buildSeconds) || !isFiniteNonNegative(c.queryMs)) problem = 'has timings that are not finite numbers';
        else if (c.info !== undefined && (c.info === null || typeof c.info !== 'object' || Array.isArray(c.info))) problem = 'has an info that is not an object';
        else {
          const bad = rankingListsProblem(c.lists, {
            questions: expect?.questions ?? (Array.isArray(c.lists) ? c.lists.length : 0),
            depth: c.depth,
            ...(expect?.isKnown ? { isKnown: expect.isKnown } : {}),
          });
          if (bad) problem = bad;
          else {
            if (c.depth < depth) return undefined; // intact, but too shallow for this sweep: recomputed deeper
            return {
              lists: (c.lists as [string, number][][]).map((l) => l.slice(0, depth).map(([id, score]) => ({ id, score }))),
              depth,
              buildSeconds: c.buildSeconds as number,
              queryMs: c.queryMs as number,
              ...(c.info ? { info: c.info as Record<string, unknown> } : {}),
            };
          }
        }
      }
    } catch (e) {
      problem = `could not be read (${(e as Error).message})`;
    }
    return problem;
  }

  /** Removes an untrusted file and says so through `warn`. */
  private discard(file: string, problem: string): void {
    this.discarded.push(file);
    this.warn(`checkpoint ${file} ${problem}; it was discarded and is recomputed`);
    try {
      unlinkSync(file);
    } catch {
      /* another run may have replaced it */
    }
  }

  /**
   * The chunks stored under `key` (see {@link chunkingCheckpointKey}), rebuilt against `docs`: ids `<docId>#<ordinal>`
   * and `text = doc.text.slice(start, end)`. Undefined when absent, disabled, or not intact: the header must name `key`
   * and carry the SHA-256 of the fields (so a range moved inside its document's bounds is caught too), and every chunk
   * must fit `docs` (document index and range in bounds). An unusable file is removed with a warning naming it and
   * recomputed, never trusted; a format-1 file (no checksum) is recomputed once.
   */
  getChunks(key: string, docs: readonly Doc[]): Chunk[] | undefined {
    if (!this.enabled) return undefined;
    const file = path.join(this.dir, `${key}.chunks`);
    if (!existsSync(file)) return undefined;
    const r = this.readChunks(file, key, docs);
    if (typeof r === 'string') {
      this.discard(file, r);
      return undefined;
    }
    this.hits.push(key);
    return r;
  }

  /**
   * What is wrong with the chunking checkpoint `file` (named `<key>.chunks`), or null when its header, key and checksum
   * hold (the documents are not at hand, so ranges are not checked against them). Removes nothing (for `doctor`).
   */
  inspectChunks(file: string): string | null {
    const r = this.readChunks(file, path.basename(file, '.chunks'), null);
    return typeof r === 'string' ? r : null;
  }

  /** The chunks (`docs` null: an empty list once the checksum holds), or the problem found. */
  private readChunks(file: string, key: string, docs: readonly Doc[] | null): Chunk[] | string {
    let problem: string;
    try {
      const buf = readFileSync(file);
      const magic = buf.toString('latin1', 0, 8);
      if (magic === 'RSCHUNK1') throw new Error('was written by an earlier release (no checksum): recomputed once');
      if (buf.length < CHUNKS_HEADER || magic !== CHUNKS_MAGIC) throw new Error('has no chunking header');
      const n = buf.readUInt32LE(8);
      if (buf.length !== CHUNKS_HEADER + n * CHUNK_FIELDS * 4) throw new Error(`has ${buf.length} bytes, not the ${CHUNKS_HEADER + n * CHUNK_FIELDS * 4} its header implies`);
      if (!buf.subarray(12, 44).equals(keyDigest(key))) throw new Error('belongs to another chunking (its header names another key)');
      const fields = buf.subarray(CHUNKS_HEADER);
      if (!createHash('sha256').update(fields).digest().equals(buf.subarray(44, CHUNKS_HEADER))) throw new Error('does not match its checksum (altered or damaged)');
      if (docs === null) return [];
      const f = new Int32Array(buf.buffer.slice(buf.byteOffset + CHUNKS_HEADER, buf.byteOffset + buf.length));
      const chunks: Chunk[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const o = i * CHUNK_FIELDS;
        const doc = docs[f[o]];
        const start = f[o + 2];
        const end = f[o + 3];
        if (!doc || start < 0 || end < start || end > textLength(doc) || f[o + 1] < 0 || f[o + 4] < 0) throw new Error(`chunk ${i + 1} is inconsistent with the documents`);
        chunks[i] = chunkOf(doc, f[o + 1], start, end, f[o + 4]);
      }
      return chunks;
    } catch (e) {
      problem = (e as Error).message;
    }
    return problem;
  }

  /**
   * Stores `chunks` of `docs` under `key` atomically (temporary file, then rename) as a compact binary file: a
   * 76-byte header (magic `RSCHUNK2`, the chunk count as uint32 LE, SHA-256 of `key`, SHA-256 of the fields), then 5
   * little-endian int32 per chunk (document index, ordinal, start, end, tokens; 20 bytes a chunk, so a million
   * documents never build one large string). Chunks whose id is not `<docId>#<ordinal>` or whose document is not in
   * `docs` are not storable: nothing is written. Returns `chunks`, so a call site reads
   * `const chunks = store.getChunks(key, docs) ?? store.putChunks(key, docs, chunkDocuments(...))`.
   * `docIndex`, when given, must map each of `docs`' ids to its index in `docs` (the sweep's `UnitContext.docIds`), so
   * that 10 M documents are not indexed a second time; without it the index is built here.
   */
  putChunks(key: string, docs: readonly Doc[], chunks: Chunk[], docIndex?: IdLookup): Chunk[] {
    if (!this.enabled) return chunks;
    const index = docIndex ?? IdIndex.over(docs.length, (i) => docs[i].id);
    const buf = Buffer.alloc(CHUNKS_HEADER + chunks.length * CHUNK_FIELDS * 4);
    buf.write(CHUNKS_MAGIC, 0, 'latin1');
    buf.writeUInt32LE(chunks.length, 8);
    const f = new Int32Array(buf.buffer, buf.byteOffset + CHUNKS_HEADER, chunks.length * CHUNK_FIELDS);
    for (let i = 0, o = 0; i < chunks.length; i++, o += CHUNK_FIELDS) {
      const c = chunks[i];
      const d = index.get(c.docId);
      if (d === undefined || docs[d]?.id !== c.docId || !isOrdinalId(c.id, c.docId, c.ordinal)) return chunks;
      f[o] = d;
      f[o + 1] = c.ordinal;
      f[o + 2] = c.start;
      f[o + 3] = c.end;
      f[o + 4] = c.tokens;
    }
    keyDigest(key).copy(buf, 12);
    createHash('sha256').update(buf.subarray(CHUNKS_HEADER)).digest().copy(buf, 44);
    mkdirSync(this.dir, { recursive: true });
    writeThenRename(path.join(this.dir, `${key}.chunks`), buf);
    this.writes.push(key);
    return chunks;
  }

  /**
   * Stores a unit atomically (temporary file, then rename). Scores round-trip exactly through JSON. The file is two
   * lines: a header naming the format, the key and the SHA-256 of the second line, then the unit as JSON.
   */
  put(key: string, c: Checkpoint): void {
    if (!this.enabled) return;
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, `${key}.json`);
    const body = Buffer.from(
      JSON.stringify({
        depth: c.depth,
        buildSeconds: c.buildSeconds,
        queryMs: c.queryMs,
        ...(c.info ? { info: c.info } : {}),
        lists: c.lists.map((l) => l.map((h) => [h.id, h.score])),
      }),
      'utf8',
    );
    const header = JSON.stringify({ format: FILE_FORMAT, key, sha256: createHash('sha256').update(body).digest('hex') });
    writeThenRename(file, Buffer.concat([Buffer.from(`${header}\n`, 'utf8'), body]));
    this.writes.push(key);
  }
}

/** SHA-256 of a key string (32 raw bytes): what a chunking file's header stores to name its key. */
function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** JSON.parse, or undefined when the text is not JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isFiniteNonNegative(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .map((k) => [k, sortKeys(o[k])]),
    );
  }
  return v;
}

/** SHA-256 hex of a file's bytes (module files, run files), or of the empty string when it cannot be read. */
export function fileHash(file: string): string {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return createHash('sha256').update('').digest('hex');
  }
}
