/**
 * The reranker contract shared by the transformers.js cross-encoder (`transformers:<folder or hub id>`) and the two
 * server protocols (`rerank:<model>` with `protocol: tei | cohere`). A reranker scores (question, chunk text) pairs;
 * the rerank stage (run/) takes the top `depth` of any retriever's ranking, rescores them, orders them by the new
 * score with the one tie rule, and keeps the rest below in their order.
 */

/** A resolved entry of the config's `rerank:` list (other than `none`). */
export interface RerankSpec {
  /** As written: `transformers:<folder or hub id>` or `rerank:<server model name>`. */
  model: string;
  /** Filename-safe label for configuration ids (default: derived from the model, e.g. `ms-marco-MiniLM-L-6-v2`). */
  label: string;
  /** Rerank depths swept (each an integer ≥ 1): how many of the top hits are rescored. */
  depth: number[];
  /** Server base URL (for `rerank:`), e.g. `http://127.0.0.1:8081`. */
  baseUrl?: string;
  /** Server protocol (for `rerank:`): Text Embeddings Inference `/rerank` or Cohere-style `/v1/rerank`. */
  protocol?: 'tei' | 'cohere';
  /** Environment variable holding the API key (sent as `Authorization: Bearer`); never written anywhere. */
  apiKeyEnv?: string;
  /** Pairs per request / per forward pass. */
  batchSize: number;
  /** Requests in flight at once (servers). */
  concurrency: number;
  /** Per-request timeout in milliseconds (servers). */
  timeoutMs: number;
  /** Maximum pair length in model tokens (transformers); longer pairs are truncated from the chunk side. */
  maxLength?: number;
  /** Allow a hub id to be fetched (transformers); off by default. */
  allowRemote?: boolean;
  /**
   * ONNX weights (transformers): `fp32` = `onnx/model.onnx` (default), `q8` = `onnx/model_quantized.onnx`. Added by
   * the rerank branch (src/rerank/spec.ts), as `embeddings:` entries have it.
   */
  dtype?: 'fp32' | 'q8';
}

/** One loaded reranker. */
export interface Reranker {
  /** As written in the config. */
  readonly name: string;
  /** Label used in configuration ids. */
  readonly label: string;
  /** Everything that determines a pair's score (model, revision/file hash, protocol, base URL, max length). */
  cacheKey(): string;
  /**
   * Scores each of `texts` against `query`; one finite number per text, in order, higher = more relevant (for a
   * cross-encoder: the relevance logit). Throws `HarnessError('RERANK_FAILED')` on failure (wrong count, non-finite).
   */
  score(query: string, texts: readonly string[]): Promise<number[]>;
  /** Requests, retries, wait and tokens so far (servers); zeros for local models. */
  stats(): { requests: number; retries: number; retryWaitSeconds: number; pairs: number };
  /** Details for the manifest. */
  describe(): Record<string, unknown>;
  /** Releases the model or connections. Idempotent. */
  close(): Promise<void>;
}
