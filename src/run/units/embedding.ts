/**
 * Unit kind `embedding` (`embedding:<label>`): one embedding model for every chunking it serves. Inputs: those
 * chunkings (a failed one is left out, its dense units fail on their own chunking input). Value: an
 * {@link EmbeddingHandle}: the loaded provider, its cache keys (part of every dense checkpoint key) and a lazy
 * `ensureEmbedded()` that embeds every distinct chunk text of those chunkings once (through `<cacheDir>/embeddings.sqlite`)
 * and each scored question once. Lazy: when every dense unit of the model comes from its checkpoint, nothing is
 * embedded (the model is still loaded, for its keys). Not checkpointed itself (its texts are cached one by one).
 *
 * A model that does not load fails every row that uses it (`embedding model <label> could not be loaded: …`, warned).
 * The provider is closed once every dense unit reading it has finished; each chunking's matrix is dropped as soon as
 * that chunking's dense units are done. Placement (issue 25 item 1, {@link vectorPlacement}): a model whose matrices
 * would exceed its share of `limits.memory` writes its rows to vector files instead (removed the same way), which the
 * exact search streams through with identical results; `info.vectors` says which and the sizes.
 */
import { performance } from 'node:perf_hooks';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { PlanUnit } from '../../plan/graph.js';
import { createProvider } from '../../embed/registry.js';
import type { EmbeddingProvider } from '../../embed/provider.js';
import { embeddingSpecKey } from '../../embed/cache.js';
import { embedTexts, embedTextsToFiles, embedTextsToMatrices, type EmbedStats, type TextSource } from '../../embed/embed-texts.js';
import { vectorMatrixBytes, type VectorMatrix } from '../../retrieve/vector-matrix.js';
import { VectorFile } from '../../retrieve/vector-file.js';
import { DEFAULT_MEMORY_BYTES, memoryShares } from '../../config/memory.js';
import { HarnessError } from '../../errors.js';
import { inTextStore, textPosition } from '../../load/text-store.js';
import { removeDeadTemporaries, tempPathFor } from '../../store/temp.js';
import { embedCallSize, type EmbeddingSpec } from '../../embed/spec.js';
import { shareByCounts } from '../share.js';
import { chunkCountOf, progressFromZero, type ChunkingStage, type Disposable, type UnitContext, type UnitKindHandler } from './types.js';

/** Questions embedded afresh, one at a time, to measure query latency (ms per query) whatever the cache holds. */
const LATENCY_PROBE = 8;

/**
 * Vectors of one model: per chunking its chunk rows (in chunk order; a resident matrix, or a vector file when the
 * model's matrices would not fit its share of `limits.memory`), per question text its vector.
 */
export interface Embedded {
  matrices: Map<string, VectorMatrix | VectorFile>;
  /** Shard buffer bytes of the file-backed search (`memoryShares(limits.memory).denseShardBytes`). */
  shardBytes: number;
  queries: Map<string, Float32Array>;
  /** Each chunking's share of the model's document embedding seconds, by chunk texts (run/share.ts). */
  docSeconds: Map<string, number>;
  /** Milliseconds per query of the latency probe. */
  probeMs: number;
}

/** What an embedding unit produces. */
export interface EmbeddingHandle extends Disposable {
  spec: EmbeddingSpec;
  provider: EmbeddingProvider;
  /** The provider's cache keys: the deferred `documentKey` / `queryKey` of every dense key. */
  modelKey: { documentKey: string; queryKey: string };
  /**
   * Embeds every chunking's texts once (the first caller starts it; later callers share the promise). `onProgress`, if
   * given, is called on every embedding batch until the promise settles: each dense unit that awaits the embedding
   * passes its own stall clock here, since the batches run outside any one unit (issue 25: at 1M documents a corpus
   * embedding longer than `limits.stallSeconds` otherwise failed every dense row as stalled).
   */
  ensureEmbedded(onProgress?: () => void): Promise<Embedded>;
}

const labelOf = (unit: PlanUnit) => unit.params.label as string;

export const embeddingUnit: UnitKindHandler = {
  kind: 'embedding',
  waitingFor: 'the model to load',
  lane: (unit) => `model:${labelOf(unit)}`,
  optionalInputs: () => 'all',
  key: async () => null,
  async run(unit, inputs, ctx) {
    const spec = ctx.config.embeddings.find((e) => e.label === labelOf(unit))!;
    const info: Record<string, unknown> = { label: spec.label, model: spec.model };
    ctx.emit({ kind: 'stage', stage: `embed ${spec.label}`, detail: 'loading model' });
    const t0 = performance.now();
    const provider =
      ctx.objectProviders.get(spec.label) ??
      (await createProvider(spec, {
        cacheDir: path.resolve(ctx.config.cacheDir),
        // A server model with a known dimension needs no create-time probe: a fully checkpointed or cached rerun then
        // sends no request at all (a wrong key still fails its rows, at the first embedding request).
        ...(spec.server?.dimensions ? { server: { probe: false } } : {}),
        // Only a one-time derived file reports progress (the GloVe binary table, built on first use).
        onProgress: progressFromZero((e) => ctx.emit(e), `${spec.label} one-time table`),
      }));
    info.load_seconds = (performance.now() - t0) / 1000;
    for (const w of provider.warnings?.() ?? []) ctx.warn(w);
    const live = unit.inputs.map((id) => inputs.get(id)).flatMap((r) => (r && 'value' in r ? [r.value as ChunkingStage] : []));
    const handle = embeddingHandle(unit, spec, provider, live, info, ctx);
    return { value: handle, info };
  },
  failed: (unit, error, ctx) => {
    const spec = ctx.config.embeddings.find((e) => e.label === labelOf(unit))!;
    const msg = `embedding model ${spec.label} could not be loaded: ${error}`;
    return { error: msg, warn: true, info: { label: spec.label, model: spec.model, error: msg } };
  },
  /**
   * Scheduling cost: the chunks of its chunkings at 2,000 texts/s. The unit itself only loads the model; the corpus is
   * embedded by its first dense unit (`ensureEmbedded`), which waits for it in the model's lane, so the cost is
   * counted here, upstream of every dense unit of the model. An overestimate for texts already in the cache; it only
   * orders units.
   */
  cost: (unit, ctx) => chunkCountOf(unit, ctx) / 2_000,
  estimate: (unit, est) => {
    const m = est.models.get(labelOf(unit));
    if (!m) return { seconds: null, basis: 'no texts' };
    if (m.toEmbed === 0) return { seconds: 0, basis: 'every text in the cache' };
    return m.textsPerSecond === null
      ? { seconds: null, basis: 'no throughput recorded yet' }
      : { seconds: m.toEmbed / m.textsPerSecond, basis: `${m.textsPerSecond.toFixed(1)} texts/s recorded by the cache` };
  },
};

/** Where a model's chunk vectors go (issue 25 item 1): in memory, or to files that exact search streams through. */
interface Placement {
  /** Bytes the model's resident matrices would take (every chunking it serves). */
  matrixBytes: number;
  /** The model's part of the dense share: `denseResidentBytes` / the models that may embed at once. */
  shareBytes: number;
  /** The file-backed search's shard buffer. */
  shardBytes: number;
  /** Null when the matrices fit `shareBytes` (resident); else the file names, one per chunking. */
  files: ((label: string, live: ChunkingStage[]) => string[]) | null;
}

/**
 * The placement rule: resident when the model's matrices fit its share of `limits.memory`
 * (`memoryShares(limit).denseResidentBytes` divided by min(concurrency, models), since that many models may hold
 * matrices at once), else one vector file per chunking in `<cacheDir>/vectors/`, named on src/store/temp.ts's
 * `*.tmp-<pid>-<ms>` scheme so that a killed run's files are removed by the next run (whose embedding units call
 * `removeDeadTemporaries` on the folder first).
 */
function vectorPlacement(ctx: UnitContext, live: ChunkingStage[], d: number): Placement {
  const shares = memoryShares(ctx.config.limits?.memory ?? DEFAULT_MEMORY_BYTES);
  const inFlight = Math.max(1, Math.min(ctx.config.concurrency, ctx.config.embeddings.length));
  const matrixBytes = live.reduce((s, st) => s + vectorMatrixBytes(st.chunks.length, d), 0);
  const shareBytes = Math.floor(shares.denseResidentBytes / inFlight);
  const dir = path.join(path.resolve(ctx.config.cacheDir), 'vectors');
  removeDeadTemporaries(dir);
  if (matrixBytes <= shareBytes) return { matrixBytes, shareBytes, shardBytes: shares.denseShardBytes, files: null };
  return {
    matrixBytes,
    shareBytes,
    shardBytes: shares.denseShardBytes,
    files: (label, chunkings) => {
      try {
        mkdirSync(dir, { recursive: true });
      } catch (e) {
        throw new HarnessError('EMBEDDING_FAILED', `cannot create the vector folder ${dir} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
          location: { file: dir },
          remedy: 'make the cache folder writable, or raise limits.memory so the vectors stay in memory',
          cause: e,
        });
      }
      const safe = label.replace(/[^A-Za-z0-9_.-]/g, '_');
      return chunkings.map((st) => tempPathFor(path.join(dir, `${safe}.${st.key}.f32`)));
    },
  };
}

function embeddingHandle(unit: PlanUnit, spec: EmbeddingSpec, provider: EmbeddingProvider, live: ChunkingStage[], info: Record<string, unknown>, ctx: UnitContext): EmbeddingHandle {
  let embedded: Promise<Embedded> | undefined;
  /** The vector files of this model (file placement), removed as their chunking's dense units finish, or at dispose. */
  let files: VectorFile[] = [];
  const cache = () => ctx.embeddingCache();
  // The stall clocks of the units awaiting the embedding, fed by every batch.
  const listeners = new Set<() => void>();
  const ensureEmbedded = (onProgress?: () => void): Promise<Embedded> => {
    if (onProgress) listeners.add(onProgress);
    const p = start();
    if (onProgress) void p.then(() => listeners.delete(onProgress), () => listeners.delete(onProgress));
    return p;
  };
  const start = (): Promise<Embedded> =>
    (embedded ??= (async () => {
      // Every chunking's chunk texts go straight into that chunking's matrix (or vector file); each distinct text is
      // embedded once. The texts are read one at a time, not listed (issue 25 item 1: a chunk of a stored document
      // reads its text from disk; a list of every chunk text would hold copies of the corpus for the whole embedding).
      const stage = `embed ${spec.label}`;
      // A stored chunk's place in the text store: the misses are read window by window of it (resident texts: any order).
      const groups: TextSource[] = live.map((st) => ({
        count: st.chunks.length,
        textAt: (i: number) => st.chunks[i].text,
        ...(st.chunks.length > 0 && inTextStore(st.chunks[0]) ? { localityAt: (i: number) => textPosition(st.chunks[i]) } : {}),
      }));
      const readWindowBytes = memoryShares(ctx.config.limits?.memory ?? DEFAULT_MEMORY_BYTES).embedReadWindowBytes;
      const embedOpts = { cache: cache(), batchSize: embedCallSize(spec), readWindowBytes, onProgress: (done: number, total: number) => {
          for (const l of listeners) l();
          ctx.emit({ kind: 'progress', stage, done, total });
        },
      };
      const place = vectorPlacement(ctx, live, provider.dimensions);
      info.vectors = { storage: place.files ? 'file' : 'memory', matrix_bytes: place.matrixBytes, share_bytes: place.shareBytes, ...(place.files ? { shard_bytes: place.shardBytes } : {}) };
      const docs = place.files
        ? await (async () => {
            const write = memoryShares(ctx.config.limits?.memory ?? DEFAULT_MEMORY_BYTES).vectorWriteBytes;
            const r = await embedTextsToFiles(provider, groups, place.files!(spec.label, live), 'document', {
              ...embedOpts,
              vectorWrite: { regionBytes: write, bufferBytes: write },
            });
            files = r.files;
            return { matrices: r.files as (VectorMatrix | VectorFile)[], stats: r.stats };
          })()
        : await embedTextsToMatrices(provider, groups, 'document', embedOpts);
      const matrices = new Map(live.map((st, g) => [st.key, docs.matrices[g]]));
      const queryTexts = ctx.scored.map((q) => q.text);
      const queries = await embedTexts(provider, queryTexts, 'query', { cache: cache(), batchSize: embedCallSize(spec) });
      // Query latency must be the model's, not the cache's: time a sample of questions embedded afresh, one at a time
      // (as a live system embeds them), whatever the cache holds.
      const probe = ctx.scored.slice(0, LATENCY_PROBE).map((q) => q.text);
      // One untimed call first: a model's first call (worker start-up, lazy kernels) is not a query's latency.
      if (probe.length > 0) await provider.embedBatch([probe[0]], 'query');
      const tq = performance.now();
      for (const text of probe) await provider.embedBatch([text], 'query');
      const probeSeconds = (performance.now() - tq) / 1000;
      const probeMs = probe.length === 0 ? 0 : (probeSeconds * 1000) / probe.length;
      info.query_latency_probe = { questions: probe.length, ms_per_query: probeMs };
      const stats: EmbedStats[] = [docs.stats, queries.stats];
      ctx.emit({
        kind: 'stage',
        stage,
        detail: `${docs.stats.distinct} distinct chunk texts: ${docs.stats.cacheHits} from the cache, ${docs.stats.cacheMisses} embedded in ${docs.stats.embedSeconds.toFixed(1)} s`,
      });
      info.documents = docs.stats;
      info.queries = queries.stats;
      // Texts per second for `validate`'s time estimate (ignored when nothing was embedded).
      cache().recordThroughput({
        specKey: embeddingSpecKey(spec),
        documentKey: provider.cacheKey('document'),
        queryKey: provider.cacheKey('query'),
        texts: docs.stats.cacheMisses,
        seconds: docs.stats.embedSeconds,
      });
      // Inference for the chunks and questions the sweep needed; the latency probe is reported apart.
      info.embed_seconds = stats.reduce((s, x) => s + x.embedSeconds, 0);
      info.cache_hits = stats.reduce((s, x) => s + x.cacheHits, 0);
      info.cache_misses = stats.reduce((s, x) => s + x.cacheMisses, 0);
      const queryMap = new Map<string, Float32Array>();
      queryTexts.forEach((text, i) => queryMap.set(text, queries.vectors[i]));
      // The model's document embedding ran once for every chunking: each chunking's rows carry its share, by texts.
      const shares = shareByCounts(docs.stats.embedSeconds, live.map((st) => st.chunks.length));
      const docSeconds = new Map(live.map((st, g) => [st.key, shares[g]]));
      info.embed_seconds_by_chunking = Object.fromEntries(docSeconds);
      return { matrices, shardBytes: place.shardBytes, queries: queryMap, docSeconds, probeMs };
    })());

  // Dense units still to finish per chunking: a chunking's matrix is dropped when its last one is done.
  const pending = new Map<string, number>();
  for (const d of ctx.dependents(unit.id)) {
    const ck = d.id.split('.')[0];
    pending.set(ck, (pending.get(ck) ?? 0) + 1);
  }
  return {
    spec,
    provider,
    modelKey: { documentKey: provider.cacheKey('document'), queryKey: provider.cacheKey('query') },
    ensureEmbedded,
    dependentDone(d: PlanUnit) {
      const ck = d.id.split('.')[0];
      const left = (pending.get(ck) ?? 1) - 1;
      pending.set(ck, left);
      if (left <= 0 && embedded)
        embedded
          .then((e) => {
            const rows = e.matrices.get(ck);
            if (rows instanceof VectorFile) rows.remove();
            e.matrices.delete(ck);
          })
          .catch(() => undefined);
    },
    async dispose() {
      // The LanceDB units of this model, in plan order (their manifest entries).
      const lance = ctx
        .dependents(unit.id)
        .filter((d) => d.params.engine === 'lancedb')
        .flatMap((d) => {
          const r = ctx.result(d.id);
          if (!r || ('error' in r && r.propagated)) return [];
          return [{ unit: d.id, ...('error' in r ? { error: r.error } : { fromCheckpoint: (r.value as { fromCheckpoint: boolean }).fromCheckpoint, ...((r.value as { info?: object }).info ?? {}) }) }];
        });
      if (lance.length > 0) info.lancedb = lance;
      info.describe = provider.describe();
      info.truncated = provider.truncatedCount();
      if (provider.stats) info.server = provider.stats(); // requests, retries, retryWaitSeconds, promptTokens
      if (!embedded) info.from_checkpoint = true;
      for (const f of files) f.remove();
      files = [];
      await provider.close();
    },
  };
}
