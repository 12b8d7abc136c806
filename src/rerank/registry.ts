/**
 * Creates the reranker named by a resolved {@link RerankSpec}. The one registry of the rerank seam: the sweep calls
 * this and never switches on the model kind itself. onnxruntime is loaded only when a local cross-encoder is made.
 */
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { RERANK_SERVER_PREFIX, RERANK_TRANSFORMERS_PREFIX } from './spec.js';
import type { Reranker, RerankSpec } from './types.js';

/** What a reranker may need from the run. */
export interface RerankerContext {
  /** Folder for derived files; hub models live in `<cacheDir>/models/<owner>/<name>/`. */
  cacheDir: string;
}

/**
 * Loads the reranker of `spec`; call `close()` when done.
 *
 * - `transformers:<folder or hub id>` → local cross-encoder (transformers.ts)
 * - `rerank:<model>` with `baseUrl` and `protocol` → a TEI or Cohere-style rerank server (http.ts, wired by the lead)
 *
 * Throws `HarnessError('MODEL_NOT_FOUND')` when a local model's files are missing (every missing file listed),
 * `HarnessError('RERANK_FAILED')` when the model does not load or its output shape is wrong, and
 * `HarnessError('CONFIG_INVALID')` for a model that is neither form.
 */
export async function createReranker(spec: RerankSpec, ctx: RerankerContext): Promise<Reranker> {
  const cacheDir = path.resolve(ctx.cacheDir);
  if (spec.model.startsWith(RERANK_TRANSFORMERS_PREFIX)) {
    const { TransformersReranker } = await import('./transformers.js');
    return TransformersReranker.create(spec, cacheDir);
  }
  if (spec.model.startsWith(RERANK_SERVER_PREFIX)) {
    const { createHttpReranker } = await import('./http.js');
    return createHttpReranker(spec);
  }
  throw new HarnessError('CONFIG_INVALID', `unknown rerank model ${JSON.stringify(spec.model)}: must start with transformers: or rerank:`, {
    location: { path: 'rerank' },
    remedy: 'write transformers:<folder or hub id> or rerank:<model> with baseUrl and protocol',
  });
}
