/**
 * The embedding provider contract shared by `use-lite`, `glove-100d`, `transformers:<id>` and `openai:<model>`, plus small vector
 * helpers. Providers are created by `createProvider` (registry.ts); the sweep embeds only through `embedTexts`
 * (embed-texts.ts), which deduplicates texts and uses the on-disk cache.
 */

/** Which side of retrieval a text is on; asymmetric models prefix queries and documents differently. */
export type EmbedRole = 'query' | 'document';

/** One loaded embedding model. */
export interface EmbeddingProvider {
  /** As written in the config: `use-lite`, `glove-100d`, `transformers:<hub id or folder>`. */
  readonly name: string;
  /** Short, filename-safe label for configuration ids: `use-lite`, `glove-100d`, `tf-<last path part>`. */
  readonly label: string;
  /** Vector length d (512 for use-lite, 100 for glove-100d, the model's hidden size for transformers). */
  readonly dimensions: number;
  /**
   * Everything that determines the vector for this role: provider, model id and file hash, dtype, pooling,
   * normalisation, the role prefix, max length. Used as the cache key prefix. Two roles with the same prefix give
   * the same key (a symmetric model may reuse one vector for both roles); two models never share a key.
   */
  cacheKey(role: EmbedRole): string;
  /**
   * Embeds a batch. `texts` are exactly as given; the provider adds its role prefix itself (exactly once). Returns one
   * `Float32Array` of length `dimensions` per text, in order, as the model returned it after pooling/normalisation.
   * Throws `HarnessError('EMBEDDING_FAILED')` when the model fails.
   */
  embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]>;
  /**
   * Calls of {@link embedBatch} a caller may keep in flight at once to use the provider fully (an integer ≥ 1;
   * absent = 1; `embedTexts` rounds a fraction down, treats NaN or a value below 1 as 1 and Infinity as every batch
   * at once): `embedTexts` starts up to this many batches before it waits for the oldest. A provider that runs
   * batches on worker threads sets it to its thread count. Vectors must not depend on it.
   */
  readonly concurrency?: number;
  /** Count of inputs truncated at the model's maximum length so far (0 for providers that never truncate). */
  truncatedCount(): number;
  /** Details for the manifest: model id, revision/hash, dims, pooling, prefixes, dtype, backend, package versions. */
  describe(): Record<string, unknown>;
  /**
   * Server providers only (`openai:`): HTTP attempts sent (`requests`, the create-time probe included), those that were
   * `retries`, seconds waited before retries (`retryWaitSeconds`: backoff and `Retry-After`), and `promptTokens` the
   * server reported in its responses' `usage` (0 when it reports none). Local providers leave it out.
   */
  stats?(): { requests: number; retries: number; retryWaitSeconds: number; promptTokens: number };
  /**
   * Optional: what the sweep should warn about after loading, e.g. a derived file on disk that failed its checks and
   * was rebuilt (glove-100d's binary table). Each message names the file.
   */
  warnings?(): string[];
  /** Releases the model (worker threads, ONNX sessions). Idempotent. */
  close(): Promise<void>;
}

/**
 * L2-normalises `v` in place (sum of squares accumulated in float64) and returns it. A zero vector stays zero.
 * Formula: v / sqrt(Σ v_j²).
 */
export function l2NormalizeInPlace(v: Float32Array): Float32Array {
  let s = 0;
  for (let j = 0; j < v.length; j++) s += v[j] * v[j];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < v.length; j++) v[j] = v[j] * inv;
  }
  return v;
}

/** A deterministic cache-key string from a flat record: `provider{"k":v,...}` with keys sorted. */
export function formatCacheKey(provider: string, fields: Record<string, string | number | boolean | null>): string {
  const sorted = Object.keys(fields)
    .sort()
    .map((k) => [k, fields[k]] as const);
  return `${provider}${JSON.stringify(Object.fromEntries(sorted))}`;
}
