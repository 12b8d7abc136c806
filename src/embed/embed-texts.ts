/**
 * The only way the sweep embeds: each distinct text once, cached on disk, in batches.
 */
import { HarnessError } from '../errors.js';
import { embeddingCacheKey, type EmbeddingCache } from './cache.js';
import { DEFAULT_BATCH_SIZE } from './spec.js';
import type { EmbeddingProvider, EmbedRole } from './provider.js';

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
 *    keeps similar lengths together and wastes less padding; stores each batch in the cache as soon as it is done.
 *
 * Does not change `texts`. Throws `HarnessError('EMBEDDING_FAILED')` when the provider returns the wrong number of
 * vectors or a vector whose length is not `provider.dimensions` (and whatever `embedBatch` or the cache throws).
 */
export async function embedTexts(
  provider: EmbeddingProvider,
  texts: readonly string[],
  role: EmbedRole,
  opts: EmbedTextsOptions = {},
): Promise<{ vectors: Float32Array[]; stats: EmbedStats }> {
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new HarnessError('CONFIG_INVALID', `batchSize (${String(batchSize)}) must be a whole number ≥ 1`, {
      location: { path: 'embeddings.batchSize' },
      remedy: 'use a batch size such as 16 or 32',
    });
  }
  // 1. distinct texts in first-seen order
  const slot = new Map<string, number>();
  const distinct: string[] = [];
  const where = new Int32Array(texts.length);
  texts.forEach((t, i) => {
    let s = slot.get(t);
    if (s === undefined) {
      s = distinct.length;
      slot.set(t, s);
      distinct.push(t);
    }
    where[i] = s;
  });
  const total = distinct.length;
  const found: (Float32Array | undefined)[] = new Array<Float32Array | undefined>(total).fill(undefined);

  // 2. cache lookup
  const providerKey = provider.cacheKey(role);
  const keys = opts.cache ? distinct.map((t) => embeddingCacheKey(providerKey, t)) : [];
  if (opts.cache && total > 0) {
    const got = opts.cache.get(keys);
    got.forEach((v, s) => {
      if (v !== undefined && v.length === provider.dimensions) found[s] = v;
    });
  }
  const missing: number[] = [];
  for (let s = 0; s < total; s++) if (found[s] === undefined) missing.push(s);
  const cacheHits = total - missing.length;
  opts.onProgress?.(cacheHits, total);

  // 3. embed the misses, longest first
  missing.sort((a, b) => distinct[b].length - distinct[a].length || a - b);
  const truncatedBefore = provider.truncatedCount();
  let embedMs = 0;
  let done = cacheHits;
  for (let b = 0; b < missing.length; b += batchSize) {
    const part = missing.slice(b, b + batchSize);
    const batch = part.map((s) => distinct[s]);
    const t0 = performance.now();
    const vecs = await provider.embedBatch(batch, role);
    embedMs += performance.now() - t0;
    if (vecs.length !== batch.length) {
      throw new HarnessError(
        'EMBEDDING_FAILED',
        `${provider.name} returned ${vecs.length} vectors for a batch of ${batch.length} texts`,
        { remedy: 'this is a bug in the embedding provider; report it with the model name' },
      );
    }
    vecs.forEach((v, j) => {
      if (v.length !== provider.dimensions) {
        throw new HarnessError(
          'EMBEDDING_FAILED',
          `${provider.name} returned a vector of length ${v.length}, expected ${provider.dimensions}`,
          { remedy: 'check that the model folder holds one model (config.json hidden_size matches the ONNX output)' },
        );
      }
      found[part[j]] = v;
    });
    opts.cache?.put(part.map((s, j) => [keys[s], vecs[j]] as const));
    done += part.length;
    opts.onProgress?.(done, total);
  }

  const vectors = Array.from(where, (s) => found[s] as Float32Array);
  return {
    vectors,
    stats: {
      requested: texts.length,
      distinct: total,
      cacheHits,
      cacheMisses: missing.length,
      embedSeconds: embedMs / 1000,
      truncated: provider.truncatedCount() - truncatedBefore,
    },
  };
}
