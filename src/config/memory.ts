/**
 * The memory budget `limits.memory` (issue 25 item 1): its written forms, how it is split between the parts of a sweep
 * that can trade memory for disk, and the floor check `validate` and `run` apply before any work. Pure.
 *
 * Shares of the limit L (see {@link memoryShares}):
 * - `denseResidentBytes` = L/4: the normalised dense matrices of the models embedding at once. A model whose
 *   matrices (every chunking it serves) fit its part of this share stays resident (the default, fastest path);
 *   otherwise its rows go to a file that exact search streams through (src/retrieve/vector-file.ts).
 * - `denseShardBytes` = L/64, clamped to [64 KiB, 16 MiB]: the one shard buffer a file-backed search reads the file
 *   into. Every question of a batch is run over a shard before the next is read, so a shard that stays in the CPU's
 *   cache is read from memory once per batch instead of once per question: measured on this machine (200k × 100
 *   vectors, 300 questions, k 100), 1-16 MiB shards searched in 0.8-1.0 s, 64 MiB in 2.3 s, 192 MiB in 1.6 s, the
 *   resident matrix in 1.0-1.9 s; hence the 16 MiB cap. Below 1 GiB of budget the shard shrinks with it.
 * - `bm25BuildBytes` = L/4: the BM25 build's postings before it spills sorted runs to disk (the build's `spillBytes`).
 * - `bm25ResidentBytes` = L/8: the finished BM25 indexes' postings (5 bytes a posting) kept in memory. A spilled build
 *   whose postings pass its part of this share (the share over `concurrency`) merges them into a postings file that
 *   each search reads its terms from (src/retrieve/bm25-postings-file.ts; the build's `residentPostingsBytes`). At the
 *   default 12 GiB and concurrency 2 the part is 768 MiB: the 1M bench corpus's indexes (about 0.5-0.6 GB of
 *   postings each) stay resident, the 10M ones (5-6 GB each, half the budget) go to files.
 * - `vectorWriteBytes` = L/64, clamped to [1 MiB, 64 MiB]: the vector-file writer's append buffers, and as much again
 *   for the region it assembles (src/retrieve/vector-file-writer.ts), when the dense vectors go to files.
 * - `embeddingCachePageBytes` = L/128, clamped to [2 MiB, 64 MiB]: the SQLite page cache of the embedding cache's
 *   connection (src/embed/cache.ts), which also bounds what the merge of staged puts sorts in memory before it spills
 *   to temporary files. 64 MiB from 8 GiB up (the cache's default), 16 MiB at 2 GiB.
 * - `embedReadWindowBytes` = L/32, clamped to [16 MiB, 256 MiB]: not memory of this process but of the page cache: the
 *   bytes of the text store whose chunk texts the embedding's misses are read from at a time (`readWindowBytes` of
 *   src/embed/embed-texts.ts), so that each window's pages come from the disk about once. 256 MiB from 8 GiB up,
 *   64 MiB at 2 GiB, 16 MiB at 512 MiB; a 10M store (13.6 GB) is read in 51 windows.
 * - `documentResidentBytes` = L/16: the documents' texts. A corpus whose file (BEIR corpus.jsonl) is larger than this
 *   share is loaded into a text store on disk (src/load/text-store.ts) and read back where needed; decided from the
 *   file's size before loading. At the default 12 GiB the share is 768 MiB: a 200k bench corpus (about 0.2 GB) stays
 *   resident, the 1M one (about 1.1 GB) and a 10M one (about 11 GB) go to the store. It was L/8 before ARCHITECTURE decision 58:
 *   the 1M grid then kept its texts resident and peaked at 5.1 GB; in the store it peaks at 3.7 GB
 *   (docs/scale.md, "1M and 10M in one run, alone (session 15)").
 * - the other 5/16 (less the small shares above) is left for what is resident and not (yet) budgeted: chunks, the rankings and scores
 *   of every configuration (the floor below), the V8 heaps of the main and worker threads, the models.
 */
import { HarnessError } from '../errors.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** Default of `limits.memory`: 12 GiB, half of this project's 24 GB machine (no swap), so two sweeps fit beside the OS. */
export const DEFAULT_MEMORY_BYTES = 12 * GiB;

/** Smallest `limits.memory` accepted: 1 MiB (tests use a few MiB to force the file-backed dense search). */
export const MIN_MEMORY_BYTES = MiB;

/**
 * Planned memory per configuration and scored question, bytes: 4 KB (the rankings, per-question details and
 * statistics a finished sweep holds; measured 3.9 KB on the helpdesk demo, src/config/schema.ts).
 */
export const BYTES_PER_CONFIGURATION_QUESTION = 4096;

const UNITS: Record<string, number> = { b: 1, kb: KiB, kib: KiB, mb: MiB, mib: MiB, gb: GiB, gib: GiB, tb: 1024 * GiB, tib: 1024 * GiB };

/**
 * Bytes of a written size: a whole number of bytes, or a string `<number><unit>` with unit B, KB, MB, GB, TB (powers
 * of 1024, as the plan prints them; KiB, MiB, GiB, TiB are the same; case and a space before the unit do not matter),
 * e.g. `"12GB"` = 12 · 2^30, `"1.5 GiB"`, `"512MB"`. Fractions are rounded down to whole bytes. Returns null for
 * anything else (the schema turns that into an error naming the key).
 */
export function parseByteSize(value: number | string): number | null {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$/.exec(value);
  if (!m) return null;
  const unit = UNITS[m[2].toLowerCase()];
  if (unit === undefined) return null;
  return Math.floor(Number(m[1]) * unit);
}

/** What {@link memoryShares} gives. All in bytes. */
export interface MemoryShares {
  /** The limit itself. */
  limitBytes: number;
  /** Dense matrices resident at once: ⌊L/4⌋. */
  denseResidentBytes: number;
  /** The file-backed search's shard buffer: ⌊L/64⌋ clamped to [64 KiB, 16 MiB]. */
  denseShardBytes: number;
  /** The BM25 build's postings before it spills: ⌊L/4⌋. */
  bm25BuildBytes: number;
  /** The finished BM25 indexes' postings held in memory: ⌊L/8⌋; a spilled index with more goes to a postings file. */
  bm25ResidentBytes: number;
  /** The documents' texts held in memory: ⌊L/16⌋; a larger corpus file goes to a text store on disk. */
  documentResidentBytes: number;
  /**
   * The vector-file writer's append buffers, and separately its region buffer (so twice this in all): ⌊L/64⌋ clamped to
   * [1 MiB, 64 MiB]. 64 MiB each from 4 GiB up (the writer's defaults); 32 MiB each at 2 GiB.
   */
  vectorWriteBytes: number;
  /**
   * The embedding cache's SQLite page cache: ⌊L/128⌋ clamped to [2 MiB, 64 MiB]. 64 MiB from 8 GiB up (the cache's
   * default), 16 MiB at 2 GiB.
   */
  embeddingCachePageBytes: number;
  /** The embedding's read window over the text store (page cache, not this process): ⌊L/32⌋ clamped to [16 MiB, 256 MiB]. */
  embedReadWindowBytes: number;
}

/**
 * Splits `limitBytes` (≥ {@link MIN_MEMORY_BYTES}) into the shares described in the module comment. Pure.
 * @throws HarnessError('CONFIG_INVALID') at `limits.memory` for a limit that is not a whole number ≥ 1 MiB.
 */
export function memoryShares(limitBytes: number): MemoryShares {
  if (!Number.isInteger(limitBytes) || limitBytes < MIN_MEMORY_BYTES) {
    throw new HarnessError('CONFIG_INVALID', `limits.memory (${limitBytes}) must be a whole number of bytes >= ${MIN_MEMORY_BYTES}`, {
      location: { path: 'limits.memory' },
      remedy: 'write a size such as 12GB or 8589934592',
    });
  }
  return {
    limitBytes,
    denseResidentBytes: Math.floor(limitBytes / 4),
    denseShardBytes: Math.min(16 * MiB, Math.max(64 * KiB, Math.floor(limitBytes / 64))),
    bm25BuildBytes: Math.floor(limitBytes / 4),
    bm25ResidentBytes: Math.floor(limitBytes / 8),
    documentResidentBytes: Math.floor(limitBytes / 16),
    vectorWriteBytes: Math.min(64 * MiB, Math.max(MiB, Math.floor(limitBytes / 64))),
    embeddingCachePageBytes: Math.min(64 * MiB, Math.max(2 * MiB, Math.floor(limitBytes / 128))),
    embedReadWindowBytes: Math.min(256 * MiB, Math.max(16 * MiB, Math.floor(limitBytes / 32))),
  };
}

/**
 * Bytes a document holds in memory besides its text, at least: its id string and its object (a `StoredDoc` with its
 * 13 bytes of store index). Measured 85 bytes a document on the 200k bench corpus with the texts in the store (heap
 * after load 73 MB against 56 MB before; ids of 4-9 characters); 64 is the floor's lower bound.
 */
export const BYTES_PER_DOCUMENT = 64;

/** Bytes of one chunk object with its id, at least: measured 0.12-0.14 KB a chunk (docs/scale.md); 120 in the floor. */
export const BYTES_PER_CHUNK = 120;

/** What of the corpus stays resident, for {@link memoryFloor}. */
export interface CorpusResidence {
  /** Documents loaded. */
  documents: number;
  /** Documents with a non-empty text: each yields at least one chunk per chunking. */
  documentsWithText: number;
  /** Code units of the texts held in memory (0 when they live in a text store): at least one byte each in V8. */
  residentTextUnits: number;
  /** Chunkings the plan cuts (its `chunking` units). */
  chunkings: number;
}

/** What the floor of a plan is made of, bytes. */
export interface MemoryFloor {
  /** Rankings and scores: configurations × scored questions × {@link BYTES_PER_CONFIGURATION_QUESTION}. */
  rankingsBytes: number;
  /** The dense search's shard buffer when a mode needs embeddings (the file mode cannot go below it), else 0. */
  denseBytes: number;
  /**
   * With a corpus: documents × {@link BYTES_PER_DOCUMENT} + the resident texts' code units (one byte each, V8's
   * one-byte strings; a text with a code unit ≥ 256 takes two, so this is a lower bound).
   */
  documentsBytes?: number;
  /** With a corpus: chunkings × documents with text × {@link BYTES_PER_CHUNK} (at least one chunk per such document). */
  chunksBytes?: number;
  /** The sum of the parts present. */
  totalBytes: number;
}

/**
 * The memory a plan needs whatever is streamed: the planned rankings (`plannedMemoryBytes` of `validate`) plus, when
 * a mode is dense, one shard buffer of the file-backed search, plus, when `corpus` is given, what of the corpus stays
 * resident (documents' ids and objects, their texts unless they are in a text store, and the chunk objects; see
 * {@link MemoryFloor}). The BM25 index is not counted. Pure.
 */
export function memoryFloor(configurations: number, scoredQuestions: number, dense: boolean, limitBytes: number, corpus?: CorpusResidence): MemoryFloor {
  const rankingsBytes = configurations * scoredQuestions * BYTES_PER_CONFIGURATION_QUESTION;
  const denseBytes = dense ? memoryShares(limitBytes).denseShardBytes : 0;
  if (corpus === undefined) return { rankingsBytes, denseBytes, totalBytes: rankingsBytes + denseBytes };
  const documentsBytes = corpus.documents * BYTES_PER_DOCUMENT + corpus.residentTextUnits;
  const chunksBytes = corpus.chunkings * corpus.documentsWithText * BYTES_PER_CHUNK;
  return { rankingsBytes, denseBytes, documentsBytes, chunksBytes, totalBytes: rankingsBytes + denseBytes + documentsBytes + chunksBytes };
}

/** `12 GiB`, `3.5 MiB`, `900 B`: a size for messages (powers of 1024). */
function formatSize(bytes: number): string {
  if (bytes >= GiB) return `${(bytes / GiB).toFixed(bytes % GiB === 0 ? 0 : 2)} GiB`;
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(bytes % MiB === 0 ? 0 : 1)} MiB`;
  if (bytes >= KiB) return `${(bytes / KiB).toFixed(bytes % KiB === 0 ? 0 : 1)} KiB`;
  return `${bytes} B`;
}

/**
 * Refuses a plan whose {@link memoryFloor} is above `limitBytes`: throws `HarnessError('CONFIG_INVALID')` at
 * `limits.memory` naming the limit, the floor and its parts, and the remedy. Returns the floor otherwise. `validate`
 * and `run` call it (src/run/front.ts) once the scored questions are known, before any unit runs.
 */
export function checkMemoryFloor(
  configurations: number,
  scoredQuestions: number,
  dense: boolean,
  limitBytes: number,
  configFile?: string,
  corpus?: CorpusResidence,
): MemoryFloor {
  const floor = memoryFloor(configurations, scoredQuestions, dense, limitBytes, corpus);
  if (floor.totalBytes > limitBytes) {
    throw new HarnessError(
      'CONFIG_INVALID',
      `limits.memory (${limitBytes} bytes, ${formatSize(limitBytes)}) is below the plan's memory floor of ${formatSize(floor.totalBytes)}: ` +
        `${configurations} configurations × ${scoredQuestions} scored questions × 4 KB of rankings (${formatSize(floor.rankingsBytes)})` +
        (floor.denseBytes > 0 ? ` + the dense search's shard buffer (${formatSize(floor.denseBytes)})` : '') +
        (corpus !== undefined && floor.documentsBytes !== undefined
          ? ` + ${corpus.documents} documents (${formatSize(floor.documentsBytes)}${corpus.residentTextUnits > 0 ? ', their texts in memory' : ', texts in a file'})`
          : '') +
        (corpus !== undefined && floor.chunksBytes !== undefined
          ? ` + ${corpus.chunkings} chunking(s) × ${corpus.documentsWithText} documents with text × 120 B of chunks (${formatSize(floor.chunksBytes)})`
          : '') +
        `; these cannot be streamed to disk`,
      {
        location: { ...(configFile ? { file: configFile } : {}), path: 'limits.memory' },
        remedy: `raise limits.memory to at least ${formatSize(floor.totalBytes)} if the machine has it, or shrink the grid (fewer chunkings, models, fusion settings, topK values), the questions or the corpus (dataset.sample)`,
      },
    );
  }
  return floor;
}

/**
 * The warning for a plan whose floor with its corpus ({@link memoryFloor} with `corpus`: documents, resident texts,
 * chunk objects) is above `limitBytes`, naming the limit, the floor and its parts and the remedy; undefined when it
 * fits. A warning, not a refusal like {@link checkMemoryFloor}: the corpus parts are estimates from measured object
 * sizes (64 B a document, 120 B a chunk, a byte a resident code unit), where the rankings' part is the plan's own.
 * `validate` and `run` emit it once the plan names its chunkings (src/run/front.ts).
 */
export function corpusFloorWarning(
  configurations: number,
  scoredQuestions: number,
  dense: boolean,
  limitBytes: number,
  corpus: CorpusResidence,
): string | undefined {
  const floor = memoryFloor(configurations, scoredQuestions, dense, limitBytes, corpus);
  if (floor.totalBytes <= limitBytes) return undefined;
  return (
    `limits.memory (${formatSize(limitBytes)}) is below the plan's estimated resident memory of ${formatSize(floor.totalBytes)}: ` +
    `rankings ${formatSize(floor.rankingsBytes)}` +
    (floor.denseBytes > 0 ? ` + the dense search's shard buffer ${formatSize(floor.denseBytes)}` : '') +
    ` + ${corpus.documents} documents ${formatSize(floor.documentsBytes ?? 0)}${corpus.residentTextUnits > 0 ? ' (texts in memory)' : ' (texts in a file)'}` +
    ` + ${corpus.chunkings} chunking(s) × ${corpus.documentsWithText} documents with text × ${BYTES_PER_CHUNK} B of chunks ${formatSize(floor.chunksBytes ?? 0)}; ` +
    `the sweep may use more than the limit: raise limits.memory to at least ${formatSize(floor.totalBytes)}, or use fewer chunkings or a smaller corpus (dataset.sample)`
  );
}
