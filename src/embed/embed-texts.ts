/**
 * The only way the sweep embeds: each distinct text once, cached on disk, in batches.
 */
import { createHash } from 'node:crypto';
import { HarnessError } from '../errors.js';
import { embeddingCacheKey, type EmbeddingCache } from './cache.js';
import { DEFAULT_BATCH_SIZE } from './spec.js';
import type { EmbeddingProvider, EmbedRole } from './provider.js';
import { createVectorMatrix, type VectorMatrix, type VectorMatrixOptions, type VectorRows } from '../retrieve/vector-matrix.js';
import { createVectorFile, type VectorFile } from '../retrieve/vector-file.js';

/** What one {@link embedTexts} call did. */
export interface EmbedStats {
  /** Texts passed in (duplicates included). */
  requested: number;
  /** Distinct texts among them (exact string equality). */
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
}

/**
 * Embeds `texts` for `role` and returns one vector per input text, aligned with `texts`.
 *
 * 1. Deduplicates: identical strings are embedded once; duplicates get the same `Float32Array` instance (treat the
 *    vectors as read-only).
 * 2. Looks the distinct texts up in `opts.cache` under `provider.cacheKey(role) + '\u0000' + sha256(text)`.
 * 3. Embeds the misses in batches of `batchSize`, longest text first (by characters, ties in first-seen order), which
 *    keeps similar lengths together and wastes less padding; keeps up to `provider.concurrency` (default 1) calls in
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
  const { distinct, where } = dedupe([texts]);
  const found: (Float32Array | undefined)[] = new Array<Float32Array | undefined>(distinct.length).fill(undefined);
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
 * Embeds several lists of texts (e.g. the chunks of each chunking of a sweep) for `role` straight into one
 * {@link VectorMatrix} per list: row i of `matrices[g]` is `groups[g][i]`, L2-normalised (duplicates included: each
 * has its own row, a copy of the first occurrence's). Each distinct text over all lists is looked up and embedded
 * once, exactly as {@link embedTexts} does (same cache keys, batches, order, stats with `requested` = all texts of
 * all lists), but no `Float32Array` is kept per text: cache rows and model outputs are written into the matrices as
 * they arrive, so the vectors are held once (the matrix the index searches; pass it to `buildVectorIndexFromMatrix`).
 * Memory: about 4 · dp per text (dp = d rounded up to 16) plus one batch of model output.
 *
 * Throws as {@link embedTexts} does, and `HarnessError('EMBEDDING_FAILED')` naming the text when a vector (from the
 * model or the cache) holds NaN/Infinity.
 */
export async function embedTextsToMatrices(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[])[],
  role: EmbedRole,
  opts: EmbedToMatrixOptions = {},
): Promise<{ matrices: VectorMatrix[]; stats: EmbedStats }> {
  checkBatchSize(opts.batchSize);
  const { rows, stats } = await embedTextsToRows(provider, groups, role, opts, (n, d) => createVectorMatrix(n, d, opts.matrix));
  return { matrices: rows, stats };
}

/**
 * {@link embedTextsToMatrices} with the rows written to files instead of memory (issue 25 item 1): group g's rows go
 * to a new {@link VectorFile} at `files[g]` (created or truncated; the caller names it and removes it), with the same
 * normalisation, so the files hold exactly the bytes the matrices' rows would. The same lookups, batches and stats.
 * Memory: one batch of model output and a 1 MiB write buffer per file; the cache lookup's per-text digests.
 * On failure every file is removed before the error is thrown. Throws as {@link embedTextsToMatrices} does, and
 * `HarnessError('EMBEDDING_FAILED')` naming a file that cannot be created or written.
 */
export async function embedTextsToFiles(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[])[],
  files: readonly string[],
  role: EmbedRole,
  opts: EmbedTextsOptions = {},
): Promise<{ files: VectorFile[]; stats: EmbedStats }> {
  checkBatchSize(opts.batchSize);
  if (files.length !== groups.length) throw new Error(`embedTextsToFiles: ${files.length} files for ${groups.length} groups`);
  const made: VectorFile[] = [];
  try {
    const { rows, stats } = await embedTextsToRows(provider, groups, role, opts, (n, d, g) => {
      const f = createVectorFile(files[g], n, d);
      made.push(f);
      return f;
    });
    for (const f of rows) f.flush();
    return { files: rows, stats };
  } catch (e) {
    for (const f of made) f.remove();
    throw e;
  }
}

/** The body of {@link embedTextsToMatrices} over any row store: `create(n, d, g)` makes group g's store. */
async function embedTextsToRows<T extends VectorRows>(
  provider: EmbeddingProvider,
  groups: readonly (readonly string[])[],
  role: EmbedRole,
  opts: EmbedTextsOptions,
  create: (n: number, d: number, g: number) => T,
): Promise<{ rows: T[]; stats: EmbedStats }> {
  const { distinct, where } = dedupe(groups);
  const matrices = groups.map((g, i) => create(g.length, provider.dimensions, i));
  // the first (group, row) of each distinct text: where its vector is written; the other occurrences copy it
  const firstGroup = new Int32Array(distinct.length).fill(-1);
  const firstRow = new Int32Array(distinct.length);
  where.forEach((w, g) =>
    w.forEach((s, i) => {
      if (firstGroup[s] === -1) {
        firstGroup[s] = g;
        firstRow[s] = i;
      }
    }),
  );
  const stats = await embedDistinct(provider, distinct, role, opts, (s, v) => {
    matrices[firstGroup[s]].setRow(firstRow[s], v, `embedding of ${JSON.stringify(preview(distinct[s]))}`);
  });
  const copy = new Float32Array(matrices.length > 0 ? matrices[0].dp : 0);
  where.forEach((w, g) =>
    w.forEach((s, i) => {
      if (firstGroup[s] === g && firstRow[s] === i) return;
      matrices[firstGroup[s]].readRow(firstRow[s], copy);
      matrices[g].writeRow(i, copy);
    }),
  );
  return { rows: matrices, stats: { requested: where.reduce((a, w) => a + w.length, 0), ...stats } };
}

/** {@link embedTextsToMatrices} for one list: `{ matrix, stats }`, row i of `matrix` is `texts[i]`. */
export async function embedTextsToMatrix(
  provider: EmbeddingProvider,
  texts: readonly string[],
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

/** Distinct texts over all groups in first-seen order, and for each group the slot of each of its texts. */
function dedupe(groups: readonly (readonly string[])[]): { distinct: string[]; where: Int32Array[] } {
  const slot = new Map<string, number>();
  const distinct: string[] = [];
  const where = groups.map((texts) => {
    const w = new Int32Array(texts.length);
    texts.forEach((t, i) => {
      let s = slot.get(t);
      if (s === undefined) {
        s = distinct.length;
        slot.set(t, s);
        distinct.push(t);
      }
      w[i] = s;
    });
    return w;
  });
  return { distinct, where };
}

/**
 * Step 2 of {@link embedDistinct}: looks every distinct text up in `cache` under
 * {@link embeddingCacheKey}`(providerKey, text)`, calls `sink(s, vector, true)` and sets `have[s] = 1` for each hit of
 * length `dimensions`, and returns the texts' SHA-256 digests (32 bytes per text, in order). The key strings (272 bytes
 * of heap each for glove-100d, 2.4 million of them for a 1M-document grid) live only during this call; the cache
 * writes of step 3 rebuild a miss's key from its digest, equal to {@link embeddingCacheKey} by construction.
 */
function lookUp(
  cache: EmbeddingCache,
  providerKey: string,
  distinct: readonly string[],
  dimensions: number,
  have: Uint8Array,
  sink: (s: number, v: Float32Array, transient: boolean) => void,
): Uint8Array {
  const digests = new Uint8Array(distinct.length * 32);
  const keys = distinct.map((t, s) => {
    const digest = createHash('sha256').update(t, 'utf8').digest();
    digests.set(digest, s * 32);
    return `${providerKey}\u0000${digest.toString('hex')}`;
  });
  cache.visit(keys, (s, v) => {
    if (v.length !== dimensions) return; // another model's vector under a colliding key: a miss
    sink(s, v, true);
    have[s] = 1;
  });
  return digests;
}

/**
 * Steps 2 and 3 of {@link embedTexts} over distinct texts: calls `sink(s, vector, transient)` once per distinct text
 * s, from the cache (transient: a view valid only during the call) or from the model (kept by no one else).
 */
async function embedDistinct(
  provider: EmbeddingProvider,
  distinct: readonly string[],
  role: EmbedRole,
  opts: EmbedTextsOptions,
  sink: (s: number, v: Float32Array, transient: boolean) => void,
): Promise<Omit<EmbedStats, 'requested'>> {
  const batchSize = checkBatchSize(opts.batchSize);
  const total = distinct.length;
  const have = new Uint8Array(total);

  // 2. cache lookup
  const providerKey = provider.cacheKey(role);
  const digests = opts.cache && total > 0 ? lookUp(opts.cache, providerKey, distinct, provider.dimensions, have, sink) : new Uint8Array(0);
  const keyOf = (s: number): string => `${providerKey}\u0000${Buffer.from(digests.buffer, digests.byteOffset + s * 32, 32).toString('hex')}`;
  const missing: number[] = [];
  for (let s = 0; s < total; s++) if (have[s] === 0) missing.push(s);
  const cacheHits = total - missing.length;
  opts.onProgress?.(cacheHits, total);

  // 3. embed the misses, longest first
  missing.sort((a, b) => distinct[b].length - distinct[a].length || a - b);
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
    const part = missing.slice(next, next + batchSize);
    next += part.length;
    if (inFlight++ === 0) busySince = performance.now();
    let call: Promise<Float32Array[]>;
    try {
      // Promise.resolve: a JavaScript provider may return the array itself, as `await` always accepted.
      call = Promise.resolve(provider.embedBatch(part.map((s) => distinct[s]), role));
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
