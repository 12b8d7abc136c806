/**
 * A LanceDB-backed semantic retriever (issue 12 §6): for corpora whose vectors do not fit in memory. The chunks'
 * vectors are written once per (model, chunking) into a Lance table under `<cacheDir>/lancedb/`, in Arrow record
 * batches of `writeBatchSize` rows (the vectors are never held in memory all at once), and searched by LanceDB.
 *
 * - `flat` (default): exact brute-force search (`bypassVectorIndex()`) with LanceDB's `dot` distance over
 *   L2-normalised float32 vectors, so distance = 1 − cos and the reported score is cos = 1 − distance, as the
 *   in-memory `semanticRetriever` reports. LanceDB sums in its own order, so scores can differ from ours in the last
 *   float32 bits (≈1e-7) and exact near-ties can swap; nothing else differs (see docs/lancedb.md for SciFact figures).
 * - `ivf_pq`: an IVF-PQ index (LanceDB `Index.ivfPq`) built on a shallow clone of the flat table (the clone shares
 *   the flat table's data files; only the index is new), searched with `nprobes` partitions and an optional
 *   `refineFactor` (re-rank `refineFactor × depth` candidates with exact distances). The index uses squared L2
 *   distance, not dot: on unit vectors |q − v|² = 2 − 2 cos ranks exactly as cosine, and LanceDB's L2 PQ encodes
 *   residuals to the partition centroid, while its dot PQ does not; on SciFact × glove-100d (72 partitions, 10
 *   sub-vectors, nprobes 20) ann_recall@10 was 0.24 with dot and 0.60 with L2 (0.71 vs 0.99 with refineFactor 10).
 *   Scores are cos = 1 − d²/2 of the PQ-approximated distance unless refined. Measure the error with
 *   {@link annRecall} against a flat run. k-means is seeded randomly by LanceDB, so two builds differ slightly.
 *
 * Versions: @lancedb/lancedb 0.31.0 (pinned in package.json; its apache-arrow peer ≤ 18.1.0). Both are loaded on the
 * first factory call only, through `require` so that our Arrow objects are the instances LanceDB's CommonJS build
 * checks with `instanceof` (an ESM `import` of apache-arrow loads a second copy that LanceDB rejects). LanceDB's native
 * logger (env_logger, variable `LANCEDB_LOG`) prints warnings to stderr by default; unless `LANCEDB_LOG` is already set,
 * it is set to `error` before the module loads (set `LANCEDB_LOG=warn` to see LanceDB's warnings).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { packageVersion } from '../embed/packages.js';
import { HarnessError } from '../errors.js';
import { removeDeadTemporaries, tempPathFor } from '../store/temp.js';
import type { Chunk, Hit } from '../types.js';
import type { Embedder } from './builtin.js';
import { watchNativeCall } from './native-work.js';
import type { RetrievedHit, Retriever, RetrieverContext, RetrieverFactory, RetrieverQuestion } from './retriever.js';

type LanceModule = typeof import('@lancedb/lancedb');
type ArrowModule = typeof import('apache-arrow');
type LanceTable = import('@lancedb/lancedb').Table;
type LanceConnection = import('@lancedb/lancedb').Connection;

/** Index settings of {@link lancedbRetriever}. */
export type LancedbIndexSetting =
  | { type: 'flat' }
  | {
      type: 'ivf_pq';
      /** IVF partitions (k-means lists), integer in [1, n]. Default round(√n), at least 1. */
      partitions?: number;
      /** PQ sub-vectors, a divisor of d. Default: the divisor of d nearest d/8 (ties: the larger). */
      subVectors?: number;
      /** Partitions probed per query, integer ≥ 1 (more than `partitions` probes them all). Default min(20, partitions). */
      nprobes?: number;
      /** When set (integer ≥ 1): fetch refineFactor × depth candidates and re-rank them by exact distance. */
      refineFactor?: number;
    };

/** Options of {@link lancedbRetriever}. */
export interface LancedbRetrieverOptions {
  /** Embeds texts (the sweep passes its cached embedder, as for `semanticRetriever`). */
  embed: Embedder;
  /**
   * When given, the vectors of chunks [start, end) of the chunking (one per chunk, in order), used instead of
   * `embed(texts, 'document')` for each written batch: the sweep reads them from its matrix by row, so no chunk text is
   * read or kept to find them (issue 25 item 1). Checked and normalised as `embed`'s are.
   */
  documentRows?: (start: number, end: number) => Promise<readonly Float32Array[]> | readonly Float32Array[];
  /**
   * Identifies the embedding model and everything that changes its vectors (e.g. the provider's cache key); part of
   * the table's name, so two models never share a table.
   */
  modelKey: string;
  /** Default `{ type: 'flat' }` (exact). */
  index?: LancedbIndexSetting;
  /** Chunks embedded and written per Arrow record batch, integer ≥ 1. Default 4096. */
  writeBatchSize?: number;
  /** Query vectors per LanceDB call, integer ≥ 1. Default {@link lancedbQueryGroup} (by index type and rows). */
  queryGroup?: number;
  /**
   * Progress of this retriever's own work, for the stall watchdog: called from LanceDB's write-progress callbacks and
   * after each written batch, during the IVF-PQ build whenever LanceDB's own threads work or the index's folder grows
   * ({@link watchNativeCall}; not when other work of the process keeps it busy), and after each query group.
   */
  onProgress?: () => void;
}

/** What the retriever's `describe()` returns (and the figures a bench reads). */
export interface LancedbDescription extends Record<string, unknown> {
  engine: 'lancedb';
  lancedb: string;
  /** Folder of the table: `<cacheDir>/lancedb/<name>.lance`. */
  table: string;
  rows: number;
  dimensions: number;
  /** True when the vectors were found complete on disk and nothing was embedded or written. */
  reused: boolean;
  /** Seconds spent embedding and writing the vectors (0 when reused). */
  writeSeconds: number;
  index:
    | { type: 'flat' }
    | { type: 'ivf_pq'; partitions: number; subVectors: number; nprobes: number; refineFactor: number | null; reused: boolean; buildSeconds: number };
}

const DEFAULT_WRITE_BATCH = 4096;
const DEFAULT_NPROBES = 20;
/** Query vectors sent to LanceDB in one query (`addQueryVector`), at most. */
const QUERY_GROUP = 32;
/**
 * Flat (exact) search: a group of g query vectors over n rows runs g full scans in one plan and holds their decoded
 * batches together, about 470 bytes per (row × query vector) measured at n = 200,000 (16 vectors: peak RSS 1.8 GB
 * against 0.3 GB one at a time, and 1.2-5× the CPU; issue 26). So a flat group is cut to keep g × n ≤ this many rows
 * (about 235 MB): 32 vectors up to 15,625 rows (SciFact: 32), 2 at 200,000, 1 from 250,001 on.
 */
const FLAT_GROUP_ROWS = 500_000;

/** Query vectors per LanceDB call: {@link QUERY_GROUP} for an index, ⌊FLAT_GROUP_ROWS / n⌋ in [1, 32] for flat search. */
export function lancedbQueryGroup(indexType: 'flat' | 'ivf_pq', rows: number): number {
  if (indexType !== 'flat') return QUERY_GROUP;
  return Math.max(1, Math.min(QUERY_GROUP, Math.floor(FLAT_GROUP_ROWS / Math.max(1, rows))));
}
/** PQ codebooks have 2^8 centroids per sub-vector; LanceDB needs at least that many rows to train them. */
const MIN_PQ_ROWS = 256;

/** The IVF-PQ clone of table `name`: `<name>-ivfpq-l2-p<P>-s<S>`. */
function ivfTableName(name: string, partitions: number, subVectors: number): string {
  return `${name}-ivfpq-l2-p${partitions}-s${subVectors}`;
}

/**
 * The environment settings that keep LanceDB 0.31.0's full-text index build out of its thread-pool deadlock
 * (lancedb/lancedb#3568, fixed upstream by lance-format/lance#7423, not in 0.31.0; docs/lancedb.md "The FTS build hang").
 *
 * Lance runs CPU work on a pool of `LANCE_CPU_THREADS` blocking threads, by default
 * max(1, cpus − `LANCE_IO_CORE_RESERVATION` (2)): one thread on a 1-3 CPU machine. Writing an FTS partition, a
 * producer holds one pool thread while it blocks on a channel of capacity 1, and the consumer's column encoder needs
 * a second pool thread to drain it; once the posting lists fill a second output batch (about 17,000 SciFact-like
 * documents, 3,000 documents of 800 random words), with as many producers as pool threads the build waits forever at
 * 0% CPU. Concurrent producers are at most the FTS workers (`LANCE_FTS_NUM_SHARDS`, lance's default
 * ⌊(threads + reservation) / 2⌋, clamped to [1, threads]). So: threads = max(2, cpus − reservation) and
 * shards = min(that default, threads − 1), which leaves one pool thread free for the consumer. Only unset variables
 * are filled in (a user's own values win, even unsafe ones); on 5 or more CPUs only `LANCE_FTS_NUM_SHARDS` is
 * written, with lance's own default value.
 *
 * @param env the environment as it is (read only).
 * @param cpus the CPUs this process may use (`os.availableParallelism()`), integer ≥ 1.
 * @returns the variables to set (names → decimal strings); empty when the user set both.
 */
export function lanceThreadEnv(env: Readonly<Record<string, string | undefined>>, cpus: number): Record<string, string> {
  const out: Record<string, string> = {};
  const reservationRaw = Number(env.LANCE_IO_CORE_RESERVATION ?? '2');
  const reservation = Number.isInteger(reservationRaw) && reservationRaw >= 0 ? reservationRaw : 2;
  let threads = Number(env.LANCE_CPU_THREADS);
  if (env.LANCE_CPU_THREADS === undefined) {
    threads = Math.max(2, cpus - reservation);
    out.LANCE_CPU_THREADS = String(threads);
  }
  if (env.LANCE_FTS_NUM_SHARDS === undefined && Number.isInteger(threads) && threads >= 2) {
    const lanceDefault = Math.min(threads, Math.max(1, Math.floor((threads + reservation) / 2)));
    out.LANCE_FTS_NUM_SHARDS = String(Math.min(lanceDefault, threads - 1));
  }
  return out;
}

/** The LanceDB thread settings in force once the module is loaded (for `describe()`). */
let threadSettings: { cpuThreads: string | null; ftsShards: string | null } | undefined;

const require = createRequire(import.meta.url);
let modules: { lance: LanceModule; arrow: ArrowModule } | undefined;
function loadModules(): { lance: LanceModule; arrow: ArrowModule } {
  if (modules === undefined) {
    // LanceDB's native logger prints WARN lines to stderr unless told otherwise; library code never prints.
    process.env.LANCEDB_LOG ??= 'error';
    // Lance reads these once, on first use of its CPU pool: set them before anything of LanceDB runs (issue 26).
    Object.assign(process.env, lanceThreadEnv(process.env, availableParallelism()));
    threadSettings = { cpuThreads: process.env.LANCE_CPU_THREADS ?? null, ftsShards: process.env.LANCE_FTS_NUM_SHARDS ?? null };
    try {
      modules = { lance: require('@lancedb/lancedb') as LanceModule, arrow: require('apache-arrow') as ArrowModule };
    } catch (e) {
      throw new HarnessError('RETRIEVER_FAILED', `cannot load @lancedb/lancedb: ${(e as Error).message}`, {
        cause: e,
        remedy: 'run `npm ci` (the lock file pins @lancedb/lancedb 0.31.0, whose native build exists for this platform)',
      });
    }
  }
  return modules;
}

/** `Table.add` options that forward LanceDB's per-batch write progress to `onProgress` (append mode, LanceDB's default). */
function progressAddOptions(onProgress: (() => void) | undefined): { mode: 'append'; progress?: () => void } {
  return onProgress ? { mode: 'append', progress: () => onProgress() } : { mode: 'append' };
}

/** Per-process queue per table path, so two factories on one table never write it at the same time. */
const locks = new Map<string, Promise<unknown>>();
async function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(key) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  locks.set(
    key,
    next.catch(() => undefined),
  );
  return next;
}

function configError(key: string, value: unknown, rule: string, remedy: string): HarnessError {
  return new HarnessError('CONFIG_INVALID', `lancedb ${key} (${JSON.stringify(value)}) ${rule}`, { location: { path: key }, remedy });
}

function checkInt(key: string, v: number | undefined, min: number): void {
  if (v !== undefined && (!Number.isInteger(v) || v < min))
    throw configError(key, v, `must be a whole number ≥ ${min}`, `set ${key} to a whole number ≥ ${min} or leave it out`);
}

/**
 * The table name for (model, chunking, chunks): `v-` + the first 32 hex digits of
 * sha256(modelKey \0 chunkingKey \0 (id \0 text \0)*), and the full digest as the stored fingerprint.
 */
export function lancedbTableKey(modelKey: string, chunkingKey: string, chunks: readonly Pick<Chunk, 'id' | 'text'>[]): { name: string; fingerprint: string } {
  const h = createHash('sha256');
  h.update(modelKey).update('\0').update(chunkingKey).update('\0');
  for (const c of chunks) h.update(c.id).update('\0').update(c.text).update('\0');
  const fingerprint = h.digest('hex');
  return { name: `v-${fingerprint.slice(0, 32)}`, fingerprint };
}

/** The divisor of d nearest d/8 (ties: the larger divisor); 1 for d < 8. */
export function defaultSubVectors(d: number): number {
  let best = 1;
  for (let m = 1; m <= d; m++) {
    if (d % m !== 0) continue;
    const a = Math.abs(m - d / 8);
    const b = Math.abs(best - d / 8);
    if (a < b || (a === b && m > best)) best = m;
  }
  return best;
}

/**
 * Per-question recall@k of an approximate list against the exact list:
 * |top-k(approx) ∩ top-k(exact)| / min(k, |exact|), where top-k is the first k hits of each list as given (pass lists
 * ordered by the tie rule, as the harness stores them). A question whose exact list is empty scores 1 (nothing to
 * find). Lists are matched by position: `exact[i]` with `approx[i]`. Result values in [0, 1], one per question.
 * This is the `ann_recall@k` column beside the usual metrics.
 * @throws HarnessError('CONFIG_INVALID') when k is not an integer ≥ 1 or the two arrays differ in length.
 */
export function annRecall(exact: readonly (readonly Hit[])[], approx: readonly (readonly Hit[])[], k: number): number[] {
  if (!Number.isInteger(k) || k < 1) throw configError('k', k, 'must be a whole number ≥ 1', 'pass the cutoff k of the ann_recall@k column');
  if (exact.length !== approx.length)
    throw new HarnessError('CONFIG_INVALID', `annRecall: ${exact.length} exact lists but ${approx.length} approximate lists`, {
      remedy: 'pass one exact and one approximate list per question, in the same order',
    });
  return exact.map((ex, i) => {
    const truth = new Set(ex.slice(0, k).map((h) => h.id));
    if (truth.size === 0) return 1;
    let found = 0;
    for (const h of approx[i].slice(0, k)) if (truth.delete(h.id)) found++;
    return found / Math.min(k, ex.length);
  });
}

interface Sidecar {
  fingerprint: string;
  rows: number;
  dimensions: number;
  modelKey: string;
  chunkingKey: string;
  lancedb: string;
}

function readJson<T>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Writes a sidecar all or nothing, through a temporary on the cache's temp-name scheme (store/temp.ts). */
function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = tempPathFor(file);
  try {
    writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/**
 * `<cacheDir>/lancedb`, created if absent, with the temporaries of dead runs removed (a sidecar
 * `<name>.json.tmp-<pid>-<ms>` left by a run killed while writing it; issue 24 §3). Returns the folder.
 */
export function openLanceFolder(cacheDir: string): string {
  const root = path.join(cacheDir, 'lancedb');
  mkdirSync(root, { recursive: true });
  removeDeadTemporaries(root);
  return root;
}

/** L2-normalises `v` (norm in float64) into `out` at `offset`; a zero vector stays zero. Checks length and finiteness. */
function putNormalised(v: Float32Array, d: number, out: Float32Array, offset: number, id: string): void {
  if (v.length !== d)
    throw new HarnessError('EMBEDDING_FAILED', `embedding of chunk ${JSON.stringify(id)} has ${v.length} values, the first had ${d}`, {
      remedy: 'the embedder must return vectors of one length',
    });
  let s = 0;
  for (let j = 0; j < d; j++) {
    if (!Number.isFinite(v[j]))
      throw new HarnessError('EMBEDDING_FAILED', `embedding of chunk ${JSON.stringify(id)} holds a non-finite value at ${j}`, {
        remedy: 'check the embedding provider',
      });
    s += v[j] * v[j];
  }
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let j = 0; j < d; j++) out[offset + j] = v[j] * inv;
}

/** One Arrow table of `ids.length` rows built from a flat row-major float32 buffer, without per-row JS arrays. */
function arrowBatch(arrow: ArrowModule, ids: readonly string[], flat: Float32Array, d: number): import('apache-arrow').Table {
  const vecType = new arrow.FixedSizeList(d, new arrow.Field('item', new arrow.Float32(), true));
  const fields = [new arrow.Field('id', new arrow.Utf8(), false), new arrow.Field('vector', vecType, false)];
  const schema = new arrow.Schema(fields);
  const idData = arrow.vectorFromArray(ids as string[], new arrow.Utf8()).data[0];
  const child = arrow.makeData({ type: new arrow.Float32(), length: ids.length * d, data: flat });
  const vecData = arrow.makeData({ type: vecType, length: ids.length, child, nullCount: 0 });
  const struct = arrow.makeData({ type: new arrow.Struct(fields), length: ids.length, children: [idData, vecData], nullCount: 0 });
  return new arrow.Table([new arrow.RecordBatch(schema, struct)]);
}

async function openIfComplete(db: LanceConnection, name: string, rows: number): Promise<LanceTable | undefined> {
  if (!(await db.tableNames()).includes(name)) return undefined;
  const t = await db.openTable(name);
  if ((await t.countRows()) === rows) return t;
  t.close();
  return undefined;
}

/**
 * Semantic retrieval through LanceDB (see the module header). The factory connects to `<ctx.cacheDir>/lancedb`,
 * reuses the table named by {@link lancedbTableKey} when its sidecar `<name>.json` holds the same fingerprint and the
 * table has one row per chunk, and otherwise (re)writes it: the chunks are embedded (role `document`) and written
 * `writeBatchSize` at a time, then the sidecar is written last, so an interrupted write is redone, never half-used.
 * For `ivf_pq` the index lives on a shallow clone `<name>-ivfpq-p<P>-s<S>` with its own sidecar, built once.
 *
 * Hits: chunk ids with score cos ∈ [−1, 1] (1 − LanceDB's dot distance), at most min(depth, chunks); a zero query
 * vector returns `[]` (as the in-memory index). `searchBatch` embeds all questions in one `embed` call.
 * @throws HarnessError('CONFIG_INVALID') for a bad setting (partitions > n, subVectors not dividing d, fewer than 256
 *   chunks for IVF-PQ, non-integers); HarnessError('EMBEDDING_FAILED') for vectors of unequal length or non-finite
 *   values; HarnessError('RETRIEVER_FAILED') when LanceDB cannot be loaded; LanceDB's own errors pass through.
 */
export function lancedbRetriever(options: LancedbRetrieverOptions): RetrieverFactory {
  const setting: LancedbIndexSetting = options.index ?? { type: 'flat' };
  const writeBatch = options.writeBatchSize ?? DEFAULT_WRITE_BATCH;
  checkInt('writeBatchSize', writeBatch, 1);
  checkInt('queryGroup', options.queryGroup, 1);
  const onProgress = options.onProgress;
  const addOptions = progressAddOptions(onProgress);
  if (setting.type !== 'flat' && setting.type !== 'ivf_pq')
    throw configError('index.type', (setting as { type: unknown }).type, 'is not one of flat, ivf_pq', 'use index: flat (exact) or ivf_pq');
  if (setting.type === 'ivf_pq') {
    checkInt('index.partitions', setting.partitions, 1);
    checkInt('index.subVectors', setting.subVectors, 1);
    checkInt('index.nprobes', setting.nprobes, 1);
    checkInt('index.refineFactor', setting.refineFactor, 1);
  }

  return async (ctx: RetrieverContext): Promise<Retriever> => {
    const { lance, arrow } = loadModules();
    const version = packageVersion('@lancedb/lancedb');
    const root = openLanceFolder(ctx.cacheDir);
    const n = ctx.chunks.length;
    const { name, fingerprint } = lancedbTableKey(options.modelKey, ctx.chunkingKey, ctx.chunks);
    const db = await lance.connect(root);
    const sidecarFile = path.join(root, `${name}.json`);

    // 1. the flat table: reuse or write
    const base = await withLock(path.join(root, name), async () => {
      const side = readJson<Sidecar>(sidecarFile);
      if (side?.fingerprint === fingerprint && side.rows === n && n > 0) {
        const t = await openIfComplete(db, name, n);
        if (t) return { table: t, dimensions: side.dimensions, reused: true, writeSeconds: 0 };
      }
      if (n === 0) return { table: undefined, dimensions: 0, reused: false, writeSeconds: 0 };
      const t0 = performance.now();
      let table: LanceTable | undefined;
      let d = 0;
      for (let start = 0; start < n; start += writeBatch) {
        ctx.signal.throwIfAborted();
        const slice = ctx.chunks.slice(start, start + writeBatch);
        const vectors = options.documentRows
          ? await options.documentRows(start, start + slice.length)
          : await options.embed(
              slice.map((c) => c.text),
              'document',
            );
        if (vectors.length !== slice.length)
          throw new HarnessError('EMBEDDING_FAILED', `the embedder returned ${vectors.length} vectors for ${slice.length} chunks`, {
            remedy: 'the embedder must return one vector per text, in order',
          });
        if (start === 0) d = vectors[0].length;
        if (d === 0) throw new HarnessError('EMBEDDING_FAILED', 'the embedder returned vectors of length 0', { remedy: 'check the embedding provider' });
        const flat = new Float32Array(slice.length * d);
        for (let i = 0; i < slice.length; i++) putNormalised(vectors[i], d, flat, i * d, slice[i].id);
        const batch = arrowBatch(
          arrow,
          slice.map((c) => c.id),
          flat,
          d,
        );
        if (table === undefined) table = await db.createTable(name, batch, { mode: 'overwrite' });
        else await table.add(batch, addOptions);
        onProgress?.();
      }
      const sidecar: Sidecar = { fingerprint, rows: n, dimensions: d, modelKey: options.modelKey, chunkingKey: ctx.chunkingKey, lancedb: version };
      writeJsonAtomic(sidecarFile, sidecar);
      return { table: table as LanceTable, dimensions: d, reused: false, writeSeconds: (performance.now() - t0) / 1000 };
    });

    // 2. the IVF-PQ index on a shallow clone
    let table = base.table;
    let index: LancedbDescription['index'] = { type: 'flat' };
    if (setting.type === 'ivf_pq' && table !== undefined) {
      const d = base.dimensions;
      const partitions = setting.partitions ?? Math.max(1, Math.round(Math.sqrt(n)));
      const subVectors = setting.subVectors ?? defaultSubVectors(d);
      if (n < MIN_PQ_ROWS)
        throw configError('index', 'ivf_pq', `needs at least ${MIN_PQ_ROWS} chunks to train its codebooks, this chunking has ${n}`, 'use index: flat for small corpora');
      if (partitions > n) throw configError('index.partitions', partitions, `must be at most the number of chunks (${n})`, 'use fewer partitions (about √n)');
      if (d % subVectors !== 0)
        throw configError('index.subVectors', subVectors, `must divide the vector length ${d}`, `use a divisor of ${d}, e.g. ${defaultSubVectors(d)}`);
      const nprobes = setting.nprobes ?? Math.min(DEFAULT_NPROBES, partitions);
      const ivfName = ivfTableName(name, partitions, subVectors);
      const ivfSidecar = path.join(root, `${ivfName}.json`);
      const built = await withLock(path.join(root, ivfName), async () => {
        const side = readJson<Sidecar & { partitions: number; subVectors: number }>(ivfSidecar);
        if (side?.fingerprint === fingerprint && side.partitions === partitions && side.subVectors === subVectors) {
          const t = await openIfComplete(db, ivfName, n);
          if (t && (await t.listIndices()).some((i) => i.columns.includes('vector') && i.numIndexedRows === n)) return { table: t, reused: true, seconds: 0 };
          t?.close();
        }
        ctx.signal.throwIfAborted();
        const t0 = performance.now();
        if ((await db.tableNames()).includes(ivfName)) await db.dropTable(ivfName);
        const clone = await db.cloneTable(ivfName, path.join(root, `${name}.lance`), { isShallow: true });
        const build = clone.createIndex('vector', {
          config: lance.Index.ivfPq({ numPartitions: partitions, numSubVectors: subVectors, distanceType: 'l2' }),
          replace: true,
        });
        await (onProgress ? watchNativeCall(build, { onProgress, folder: path.join(root, `${ivfName}.lance`) }) : build);
        writeJsonAtomic(ivfSidecar, { ...readJson<Sidecar>(sidecarFile), partitions, subVectors });
        return { table: clone, reused: false, seconds: (performance.now() - t0) / 1000 };
      });
      base.table?.close();
      table = built.table;
      index = { type: 'ivf_pq', partitions, subVectors, nprobes, refineFactor: setting.refineFactor ?? null, reused: built.reused, buildSeconds: built.seconds };
    }

    /** One LanceDB query for a group of vectors ({@link lancedbQueryGroup}; `addQueryVector`; rows carry `query_index` when > 1). */
    const searchGroup = async (vs: readonly Float32Array[], depth: number): Promise<RetrievedHit[][]> => {
      const out: RetrievedHit[][] = vs.map(() => []);
      if (table === undefined) return out;
      const live: { at: number; v: Float32Array }[] = [];
      for (const [at, q] of vs.entries()) {
        if (q.length !== base.dimensions)
          throw new HarnessError('EMBEDDING_FAILED', `query vector has ${q.length} values, the chunks' have ${base.dimensions}`, {
            remedy: 'embed questions with the model that embedded the chunks',
          });
        let s = 0;
        for (let j = 0; j < q.length; j++) s += q[j] * q[j];
        if (!Number.isFinite(s))
          throw new HarnessError('EMBEDDING_FAILED', 'query vector holds a non-finite value', { remedy: 'check the embedding provider' });
        if (s === 0) continue; // a zero query has no direction: no hits, as the in-memory index
        const v = new Float32Array(q.length);
        putNormalised(q, q.length, v, 0, '(query)');
        live.push({ at, v });
      }
      if (live.length === 0) return out;
      // flat: dot distance 1 − q·v; IVF-PQ: squared L2 |q − v|² = 2 − 2 q·v on unit vectors (see the module header)
      const l2 = index.type === 'ivf_pq';
      let query = table.vectorSearch(live[0].v);
      for (const x of live.slice(1)) query = query.addQueryVector(x.v);
      query = query
        .distanceType(l2 ? 'l2' : 'dot')
        .limit(depth)
        .select(['id', '_distance']);
      if (index.type === 'flat') query = query.bypassVectorIndex();
      else {
        query = query.nprobes(index.nprobes);
        if (index.refineFactor !== null) query = query.refineFactor(index.refineFactor);
      }
      const rows = (await query.toArray()) as { id: string; _distance: number; query_index?: number }[];
      for (const r of rows) out[live[r.query_index ?? 0].at].push({ id: r.id, score: l2 ? 1 - r._distance / 2 : 1 - r._distance });
      return out;
    };

    const searchBatch = async (qs: readonly RetrieverQuestion[], depth: number, signal: AbortSignal): Promise<RetrievedHit[][]> => {
      const qv = await options.embed(
        qs.map((q) => q.text),
        'query',
      );
      const out: RetrievedHit[][] = [];
      const group = options.queryGroup ?? lancedbQueryGroup(index.type, n);
      for (let i = 0; i < qv.length; i += group) {
        signal.throwIfAborted();
        out.push(...(await searchGroup(qv.slice(i, i + group), depth)));
        onProgress?.();
      }
      return out;
    };

    const description: LancedbDescription = {
      engine: 'lancedb',
      lancedb: version,
      table: path.join(root, `${index.type === 'flat' ? name : ivfTableName(name, index.partitions, index.subVectors)}.lance`),
      rows: n,
      dimensions: base.dimensions,
      reused: base.reused,
      writeSeconds: base.writeSeconds,
      index,
    };
    return {
      search: async (q, depth, signal) => (await searchBatch([q], depth, signal))[0],
      searchBatch,
      describe: () => ({ ...description, threads: { ...threadSettings } }),
      close: () => {
        table?.close();
        db.close();
      },
    };
  };
}

/** Tokenizer settings of LanceDB's full-text index (`Index.fts`); omitted keys take LanceDB 0.31's defaults. */
export interface LancedbFtsSetting {
  /** `simple` (split on whitespace and punctuation; LanceDB's default) or `whitespace`. */
  baseTokenizer?: 'simple' | 'whitespace';
  /** Language for stemming and stop words (LanceDB default `English`). */
  language?: string;
  lowercase?: boolean;
  stem?: boolean;
  removeStopWords?: boolean;
  asciiFolding?: boolean;
}

/** One Arrow table of (id, text) rows. */
function arrowTextBatch(arrow: ArrowModule, chunks: readonly Chunk[]): import('apache-arrow').Table {
  const fields = [new arrow.Field('id', new arrow.Utf8(), false), new arrow.Field('text', new arrow.Utf8(), false)];
  const schema = new arrow.Schema(fields);
  const ids = arrow.vectorFromArray(
    chunks.map((c) => c.id),
    new arrow.Utf8(),
  ).data[0];
  const texts = arrow.vectorFromArray(
    chunks.map((c) => c.text),
    new arrow.Utf8(),
  ).data[0];
  const struct = arrow.makeData({ type: new arrow.Struct(fields), length: chunks.length, children: [ids, texts], nullCount: 0 });
  return new arrow.Table([new arrow.RecordBatch(schema, struct)]);
}

/**
 * A further keyword row: LanceDB's own full-text search (BM25 over its tokenizer, `Index.fts`), not our analyser, so
 * its scores and rankings differ from `keywordRetriever`'s. The chunks' texts are written once per (chunking, chunk
 * texts, tokenizer settings) into `<cacheDir>/lancedb/k-<hash>.lance` in batches of `writeBatchSize`, indexed without
 * positions (no phrase queries), and reused when the sidecar `<name>.json` matches and the index covers every row.
 * `onProgress` (for the stall watchdog) is called from LanceDB's write-progress callbacks, after each written batch,
 * and during the index build whenever LanceDB's own threads work or the table's folder grows ({@link watchNativeCall}).
 * Hits: chunk ids with LanceDB's BM25 score (> 0), at most `depth`; a question with no indexed term gets `[]`.
 * @throws HarnessError('CONFIG_INVALID') for a bad `writeBatchSize`; HarnessError('RETRIEVER_FAILED') when LanceDB
 *   cannot be loaded; LanceDB's own errors pass through.
 */
export function lancedbKeywordRetriever(options: { fts?: LancedbFtsSetting; writeBatchSize?: number; onProgress?: () => void } = {}): RetrieverFactory {
  const writeBatch = options.writeBatchSize ?? DEFAULT_WRITE_BATCH;
  checkInt('writeBatchSize', writeBatch, 1);
  const fts = options.fts ?? {};
  const onProgress = options.onProgress;
  const addOptions = progressAddOptions(onProgress);
  return async (ctx: RetrieverContext): Promise<Retriever> => {
    const { lance, arrow } = loadModules();
    const version = packageVersion('@lancedb/lancedb');
    const root = openLanceFolder(ctx.cacheDir);
    const n = ctx.chunks.length;
    const key = lancedbTableKey(`fts ${JSON.stringify(fts, Object.keys(fts).sort())}`, ctx.chunkingKey, ctx.chunks);
    const name = `k-${key.fingerprint.slice(0, 32)}`;
    const sidecarFile = path.join(root, `${name}.json`);
    const db = await lance.connect(root);
    const built = await withLock(path.join(root, name), async () => {
      const side = readJson<{ fingerprint: string; rows: number }>(sidecarFile);
      if (n === 0) return { table: undefined, reused: false, seconds: 0 };
      if (side?.fingerprint === key.fingerprint && side.rows === n) {
        const t = await openIfComplete(db, name, n);
        if (t && (await t.listIndices()).some((i) => i.columns.includes('text') && i.numIndexedRows === n)) return { table: t, reused: true, seconds: 0 };
        t?.close();
      }
      const t0 = performance.now();
      let table: LanceTable | undefined;
      for (let start = 0; start < n; start += writeBatch) {
        ctx.signal.throwIfAborted();
        const batch = arrowTextBatch(arrow, ctx.chunks.slice(start, start + writeBatch));
        if (table === undefined) table = await db.createTable(name, batch, { mode: 'overwrite' });
        else await table.add(batch, addOptions);
        onProgress?.();
      }
      const build = table!.createIndex('text', { config: lance.Index.fts({ withPosition: false, ...fts }), replace: true });
      await (onProgress ? watchNativeCall(build, { onProgress, folder: path.join(root, `${name}.lance`) }) : build);
      writeJsonAtomic(sidecarFile, { fingerprint: key.fingerprint, rows: n, chunkingKey: ctx.chunkingKey, fts, lancedb: version });
      return { table, reused: false, seconds: (performance.now() - t0) / 1000 };
    });
    const table = built.table;
    const search = async (q: RetrieverQuestion, depth: number): Promise<RetrievedHit[]> => {
      if (table === undefined) return [];
      const rows = (await (table.search(q.text, 'fts') as import('@lancedb/lancedb').Query)
        .limit(depth)
        .select(['id', '_score'])
        .toArray()) as { id: string; _score: number }[];
      return rows.filter((r) => r._score > 0).map((r) => ({ id: r.id, score: r._score }));
    };
    return {
      search: (q, depth) => search(q, depth),
      describe: () => ({
        engine: 'lancedb-fts',
        lancedb: version,
        table: path.join(root, `${name}.lance`),
        rows: n,
        fts,
        reused: built.reused,
        buildSeconds: built.seconds,
        threads: { ...threadSettings },
      }),
      close: () => {
        table?.close();
        db.close();
      },
    };
  };
}
