/**
 * Grid expansion (pure): chunking × retriever × embedding × fusion × rerank × k, in a deterministic order (the order
 * the config lists each axis), with a readable id per configuration.
 *
 * Rows, in order: for each grid chunking, the built-in modes (config order; semantic and hybrid once per embedding
 * model; keyword once per `keyword:` engine; semantic once per `semantic:` engine, in config order; hybrid once per fusion setting); then each external retriever (on its own chunking) and each run (whole
 * documents); each of these once per rerank setting (`none` first when listed first); then each k.
 */
import type { ChunkingSpec, ConfigSpec, FusionSpec, Mode, RerankStage } from '../types.js';
import { keywordRetrieverName, semanticRetrieverName, type SweepConfig } from './schema.js';
import { fusionKey } from '../retrieve/fusion.js';

/** `none` for whole documents, else `cs<size>-ov<overlap>` (sizes and overlaps in tokens). */
export function chunkingKeyOf(spec: ChunkingSpec): string {
  return spec.size === null ? 'none' : `cs${spec.size}-ov${spec.overlap}`;
}

/**
 * The distinct chunkings of the grid, in config order: `none` once (overlap 0), each numeric size once per overlap.
 */
export function expandChunkings(config: Pick<SweepConfig, 'chunking'>): ChunkingSpec[] {
  const out: ChunkingSpec[] = [];
  for (const size of config.chunking.sizes) {
    if (size === 'none') out.push({ size: null, overlap: 0 });
    else for (const overlap of config.chunking.overlaps) out.push({ size, overlap });
  }
  return out;
}

/**
 * Every chunking the sweep needs: the grid's, then any other chunking an external retriever asks for (config order).
 */
export function neededChunkings(config: Pick<SweepConfig, 'chunking' | 'retrievers'>): ChunkingSpec[] {
  const out = expandChunkings(config);
  const keys = new Set(out.map(chunkingKeyOf));
  for (const r of config.retrievers ?? []) {
    const k = chunkingKeyOf(r.chunking);
    if (!keys.has(k)) out.push(r.chunking), keys.add(k);
  }
  return out;
}

/**
 * Readable configuration id: `<chunking>.<retriever>[.<embedding label>][.rr-<label>-d<depth>].k<k>`, e.g.
 * `cs256-ov32.hybrid.use-lite.k5`, `none.keyword.k10`, `cs256-ov16.hybrid-cvx-mm-a0.5.use-lite.k10`,
 * `none.words.rr-minilm-d20.k5`. Unique within a grid.
 */
export function configId(chunkingKey: string, retriever: string, embeddingLabel: string | null, k: number, rerank: RerankStage | null = null): string {
  return [
    chunkingKey,
    retriever,
    ...(embeddingLabel === null ? [] : [embeddingLabel]),
    ...(rerank === null ? [] : [`rr-${rerank.label}-d${rerank.depth}`]),
    `k${k}`,
  ].join('.');
}

/** The configuration id without its `.k<k>` part: identifies the ranking a row's k cuts. */
export function rankingId(spec: Pick<ConfigSpec, 'chunkingKey' | 'retriever' | 'embedding' | 'rerank'>): string {
  return configId(spec.chunkingKey, spec.retriever, spec.embedding, 0, spec.rerank).replace(/\.k0$/, '');
}

/** Rerank stages of the grid: null for `none`, one stage per (reranker, depth). */
export function expandRerank(config: Pick<SweepConfig, 'rerank'>): (RerankStage | null)[] {
  const out: (RerankStage | null)[] = [];
  for (const r of config.rerank ?? [null]) {
    if (r === null) out.push(null);
    else for (const depth of r.depth) out.push({ label: r.label, model: r.model, depth });
  }
  return out.length === 0 ? [null] : out;
}

/**
 * Expands the grid into rows (see the module header for the order). Keyword rows have `embedding: null`, one row per `keyword` engine (default: bm25 only, retriever `keyword`); semantic and
 * hybrid rows one row per embedding model; semantic rows one per `semantic` engine (default: memory only, retriever
 * `semantic`); hybrid rows one per fusion setting.
 */
export function expandGrid(
  config: Pick<SweepConfig, 'chunking' | 'modes' | 'embeddings' | 'topK' | 'hybrid'> & Partial<Pick<SweepConfig, 'retrievers' | 'runs' | 'rerank' | 'semantic' | 'keyword'>>,
): ConfigSpec[] {
  const rows: ConfigSpec[] = [];
  const reranks = expandRerank({ rerank: config.rerank ?? [null] });
  const fusions = config.hybrid.fusion ?? [{ method: 'rrf' as const, k: config.hybrid.rrfK }];
  const push = (base: Omit<ConfigSpec, 'id' | 'k' | 'rerank'>) => {
    for (const rerank of reranks)
      for (const k of config.topK)
        rows.push({ ...base, id: configId(base.chunkingKey, base.retriever, base.embedding, k, rerank), rerank, k });
  };
  for (const chunking of expandChunkings(config)) {
    const chunkingKey = chunkingKeyOf(chunking);
    for (const mode of config.modes) {
      if (mode === 'keyword') {
        for (const engine of config.keyword ?? [{ engine: 'bm25' as const }])
          push({ chunkingKey, chunking, mode, retriever: keywordRetrieverName(engine), embedding: null, fusion: null });
        continue;
      }
      for (const model of config.embeddings) {
        if (mode === 'semantic') {
          for (const engine of config.semantic ?? [{ engine: 'memory' as const }])
            push({ chunkingKey, chunking, mode, retriever: semanticRetrieverName(engine), embedding: model.label, fusion: null });
          continue;
        }
        for (const f of fusions) {
          const key = fusionKey(f, config.hybrid.rrfK);
          const fusion: FusionSpec = { ...f, key };
          push({ chunkingKey, chunking, mode, retriever: key === 'rrf' ? 'hybrid' : `hybrid-${key}`, embedding: model.label, fusion });
        }
      }
    }
  }
  for (const r of config.retrievers ?? [])
    push({ chunkingKey: chunkingKeyOf(r.chunking), chunking: r.chunking, mode: 'external' as Mode, retriever: r.name, embedding: null, fusion: null });
  for (const r of config.runs ?? [])
    push({ chunkingKey: 'none', chunking: { size: null, overlap: 0 }, mode: 'run' as Mode, retriever: r.name, embedding: null, fusion: null });
  return rows;
}
