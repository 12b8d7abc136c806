/**
 * The grid guard (issue 24 §2): a grid is refused before any work when it has more configurations than
 * `limits.maxConfigurations`, so a typo that multiplies the grid fails in a second with the count and the remedy
 * instead of exhausting the heap minutes later. Pure: counts without expanding the grid.
 */
import { HarnessError } from '../errors.js';
import { expandChunkings, expandRerank } from './expand.js';
import { DEFAULT_MAX_CONFIGURATIONS, type SweepConfig } from './schema.js';

/** The parts of a config that decide the grid's size. */
export type GridShape = Pick<SweepConfig, 'chunking' | 'modes' | 'embeddings' | 'topK' | 'hybrid'> &
  Partial<Pick<SweepConfig, 'retrievers' | 'runs' | 'rerank' | 'semantic' | 'keyword'>>;

/**
 * How many rows `expandGrid(config)` returns, computed without building them: per chunking, one row family per keyword
 * engine, per (model × semantic engine) and per (model × fusion setting) of the modes listed; plus one per retriever and
 * run; times the rerank stages and the top-k values. Equal to `expandGrid(config).length` (tested).
 */
export function countConfigurations(config: GridShape): number {
  const keywordEngines = (config.keyword ?? [{ engine: 'bm25' }]).length;
  const semanticEngines = (config.semantic ?? [{ engine: 'memory' }]).length;
  const fusions = config.hybrid.fusion?.length ?? 1;
  let perChunking = 0;
  for (const mode of config.modes) {
    if (mode === 'keyword') perChunking += keywordEngines;
    else if (mode === 'semantic') perChunking += config.embeddings.length * semanticEngines;
    else perChunking += config.embeddings.length * fusions;
  }
  const families = expandChunkings(config).length * perChunking + (config.retrievers?.length ?? 0) + (config.runs?.length ?? 0);
  return families * expandRerank({ rerank: config.rerank ?? [null] }).length * config.topK.length;
}

/**
 * Throws `HarnessError('CONFIG_INVALID')` at key `limits.maxConfigurations` when the grid has more configurations than
 * the limit (default {@link DEFAULT_MAX_CONFIGURATIONS}), naming the count and the remedy; returns
 * the count otherwise. `validate` and `run` call it before reading the dataset.
 */
export function checkGridSize(config: GridShape & { limits?: { maxConfigurations: number } }): number {
  const n = countConfigurations(config);
  const max = config.limits?.maxConfigurations ?? DEFAULT_MAX_CONFIGURATIONS;
  if (n > max) {
    throw new HarnessError(
      'CONFIG_INVALID',
      `the grid has ${n} configurations, more than limits.maxConfigurations (${max}); ` +
        `a sweep keeps every configuration's rankings in memory (about 4 KB per configuration and question)`,
      {
        location: { path: 'limits.maxConfigurations' },
        remedy: `shrink the grid (fewer chunking sizes, overlaps, topK values, models, fusion settings or rerank depths), or raise limits.maxConfigurations if this machine has the memory (and run node with a larger --max-old-space-size)`,
      },
    );
  }
  return n;
}
