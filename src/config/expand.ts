/**
 * Grid expansion (pure): the cartesian product chunking × overlap × mode × embedding × k, in a deterministic order
 * (the order the config lists each axis), with a readable id per configuration.
 */
import type { ChunkingSpec, ConfigSpec, Mode } from '../types.js';
import type { SweepConfig } from './schema.js';

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
 * Readable configuration id: `<chunking>.<mode>[.<embedding label>].k<k>`, e.g. `cs256-ov32.hybrid.use-lite.k5`
 * or `none.keyword.k10`. Unique within a grid.
 */
export function configId(chunkingKey: string, mode: Mode, embeddingLabel: string | null, k: number): string {
  return [chunkingKey, mode, ...(embeddingLabel === null ? [] : [embeddingLabel]), `k${k}`].join('.');
}

/**
 * Expands the grid. Keyword rows have `embedding: null`; semantic and hybrid rows have one row per embedding model.
 * Order: chunkings (config order) → modes (config order) → embeddings (config order) → k (config order).
 */
export function expandGrid(config: Pick<SweepConfig, 'chunking' | 'modes' | 'embeddings' | 'topK' | 'hybrid'>): ConfigSpec[] {
  const rows: ConfigSpec[] = [];
  for (const chunking of expandChunkings(config)) {
    const key = chunkingKeyOf(chunking);
    for (const mode of config.modes) {
      const models = mode === 'keyword' ? [null] : config.embeddings;
      for (const model of models) {
        for (const k of config.topK) {
          rows.push({
            id: configId(key, mode, model === null ? null : model.label, k),
            chunkingKey: key,
            chunking,
            mode,
            retriever: mode,
            embedding: model === null ? null : model.label,
            fusion: mode === 'hybrid' ? { method: 'rrf', k: config.hybrid.rrfK, key: 'rrf' } : null,
            rerank: null,
            k,
          });
        }
      }
    }
  }
  return rows;
}
