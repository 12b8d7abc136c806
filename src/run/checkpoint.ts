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
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Chunk, ChunkingSpec, Doc, Hit } from '../types.js';

/** Bumped whenever the chunker (src/chunk/) cuts differently: part of every chunking checkpoint key. */
export const CHUNKER_VERSION = 1;

/** First bytes of a chunking checkpoint file (`<key>.chunks`). */
const CHUNKS_MAGIC = 'RSCHUNK1';
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

  constructor(cacheDir: string, enabled = true) {
    this.dir = path.join(path.resolve(cacheDir), 'checkpoints');
    this.enabled = enabled;
  }

  /** The key of a unit: sha256 over the JSON of its parts (object keys sorted). */
  static key(parts: Record<string, unknown>): string {
    return createHash('sha256')
      .update(JSON.stringify(sortKeys({ format: CHECKPOINT_FORMAT, ...parts })))
      .digest('hex');
  }

  /** The stored unit for `key` when it exists, is readable and reaches `depth`; otherwise undefined. */
  get(key: string, depth: number): Checkpoint | undefined {
    if (!this.enabled) return undefined;
    const file = path.join(this.dir, `${key}.json`);
    if (!existsSync(file)) return undefined;
    try {
      const c = JSON.parse(readFileSync(file, 'utf8')) as { lists: [string, number][][]; depth: number; buildSeconds: number; queryMs: number; info?: Record<string, unknown> };
      if (!Array.isArray(c.lists) || typeof c.depth !== 'number' || c.depth < depth) return undefined;
      this.hits.push(key);
      return {
        lists: c.lists.map((l) => l.slice(0, depth).map(([id, score]) => ({ id, score }))),
        depth,
        buildSeconds: c.buildSeconds,
        queryMs: c.queryMs,
        ...(c.info ? { info: c.info } : {}),
      };
    } catch {
      try {
        unlinkSync(file);
      } catch {
        /* another run may have replaced it */
      }
      return undefined;
    }
  }

  /**
   * The chunks stored under `key` (see {@link chunkingCheckpointKey}), rebuilt against `docs`: ids `<docId>#<ordinal>`
   * and `text = doc.text.slice(start, end)`. Undefined when absent, disabled, or not consistent with `docs` (a document
   * index or range out of bounds): an unusable file is removed and recomputed, never trusted.
   */
  getChunks(key: string, docs: readonly Doc[]): Chunk[] | undefined {
    if (!this.enabled) return undefined;
    const file = path.join(this.dir, `${key}.chunks`);
    if (!existsSync(file)) return undefined;
    try {
      const buf = readFileSync(file);
      if (buf.length < 12 || buf.toString('latin1', 0, 8) !== CHUNKS_MAGIC) throw new Error('bad header');
      const n = buf.readUInt32LE(8);
      if (buf.length !== 12 + n * CHUNK_FIELDS * 4) throw new Error('bad length');
      const f = new Int32Array(buf.buffer.slice(buf.byteOffset + 12, buf.byteOffset + buf.length));
      const chunks: Chunk[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const o = i * CHUNK_FIELDS;
        const doc = docs[f[o]];
        const start = f[o + 2];
        const end = f[o + 3];
        if (!doc || start < 0 || end < start || end > doc.text.length) throw new Error('inconsistent with the documents');
        chunks[i] = { id: `${doc.id}#${f[o + 1]}`, docId: doc.id, ordinal: f[o + 1], text: doc.text.slice(start, end), start, end, tokens: f[o + 4] };
      }
      this.hits.push(key);
      return chunks;
    } catch {
      try {
        unlinkSync(file);
      } catch {
        /* another run may have replaced it */
      }
      return undefined;
    }
  }

  /**
   * Stores `chunks` of `docs` under `key` atomically (temporary file, then rename) as a compact binary file: a
   * 12-byte header, then 5 little-endian int32 per chunk (document index, ordinal, start, end, tokens; 20 bytes a
   * chunk, so a million documents never build one large string). Chunks whose id is not `<docId>#<ordinal>` or whose
   * document is not in `docs` are not storable: nothing is written. Returns `chunks`, so a call site reads
   * `const chunks = store.getChunks(key, docs) ?? store.putChunks(key, docs, chunkDocuments(...))`.
   */
  putChunks(key: string, docs: readonly Doc[], chunks: Chunk[]): Chunk[] {
    if (!this.enabled) return chunks;
    const index = new Map<string, number>();
    docs.forEach((d, i) => index.set(d.id, i));
    const buf = Buffer.alloc(12 + chunks.length * CHUNK_FIELDS * 4);
    buf.write(CHUNKS_MAGIC, 0, 'latin1');
    buf.writeUInt32LE(chunks.length, 8);
    const f = new Int32Array(buf.buffer, buf.byteOffset + 12, chunks.length * CHUNK_FIELDS);
    for (const [i, c] of chunks.entries()) {
      const d = index.get(c.docId);
      if (d === undefined || c.id !== `${c.docId}#${c.ordinal}`) return chunks;
      f.set([d, c.ordinal, c.start, c.end, c.tokens], i * CHUNK_FIELDS);
    }
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, `${key}.chunks`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, buf);
    renameSync(tmp, file);
    this.writes.push(key);
    return chunks;
  }

  /** Stores a unit atomically (temporary file, then rename). Scores round-trip exactly through JSON. */
  put(key: string, c: Checkpoint): void {
    if (!this.enabled) return;
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, `${key}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    const body = JSON.stringify({
      depth: c.depth,
      buildSeconds: c.buildSeconds,
      queryMs: c.queryMs,
      ...(c.info ? { info: c.info } : {}),
      lists: c.lists.map((l) => l.map((h) => [h.id, h.score])),
    });
    writeFileSync(tmp, body);
    renameSync(tmp, file);
    this.writes.push(key);
  }
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
