/**
 * Unit kind `chunking` (`chunking:<ck>`): one chunking of the corpus. Value: a {@link ChunkingStage}. Checkpointed as
 * `<key>.chunks` (issue 13 §1; the key is the plan's `chunkingCheckpointKey`): a re-run after a kill reads the chunks
 * back instead of cutting again. Both cores (worker threads) for large corpora, in-process below a few hundred KB;
 * identical chunks either way. Warns about questions no chunk can answer (document level).
 */
import { performance } from 'node:perf_hooks';
import type { Chunk, Question } from '../../types.js';
import type { SweepConfig } from '../../config/schema.js';
import type { PlanUnit } from '../../plan/graph.js';
import { chunkDocumentsParallel } from '../../chunk/parallel.js';
import { chunkDocMap, type ChunkDocMap } from '../chunk-ids.js';
import { progressFromZero, type ChunkingStage, type UnitContext, type UnitKindHandler, type UnitResult } from './types.js';

/** `chunking:none` → `none`. */
const keyOf = (unit: PlanUnit) => unit.id.slice('chunking:'.length);
const specOf = (unit: PlanUnit) => ({ size: unit.params.size as number | null, overlap: unit.params.overlap as number });

function stageOf(unit: PlanUnit, chunks: Chunk[], seconds: number, ctx: UnitContext): ChunkingStage {
  const docOf = chunkDocMap(ctx.docIds, chunks);
  reportUnanswerable(keyOf(unit), docOf, ctx.scored, ctx.config, (m) => ctx.warn(m));
  return { spec: specOf(unit), key: keyOf(unit), chunks, docOf, seconds };
}

export const chunkingUnit: UnitKindHandler = {
  kind: 'chunking',
  stage: 'chunk',
  waitingFor: 'its chunks',
  lane: () => 'chunking',
  key: async (unit) => unit.key,
  restore(key, unit, _inputs, ctx): UnitResult | undefined {
    const t0 = performance.now();
    const chunks = ctx.store.getChunks(key, ctx.dataset.docs);
    if (!chunks) return undefined;
    const seconds = (performance.now() - t0) / 1000;
    return { value: stageOf(unit, chunks, seconds, ctx), seconds };
  },
  async run(unit, _inputs, ctx, watch) {
    const t0 = performance.now();
    const report = progressFromZero((e) => ctx.emit(e), `chunk ${keyOf(unit)}`);
    const chunks = await chunkDocumentsParallel(ctx.dataset.docs, specOf(unit), {
      signal: ctx.signal,
      onProgress: (done, total) => {
        watch.progress(); // the workers' messages may arrive outside this unit's async context
        report(done, total);
      },
    });
    return { value: stageOf(unit, chunks, (performance.now() - t0) / 1000, ctx) };
  },
  save(key, _unit, result, ctx) {
    if ('value' in result) ctx.store.putChunks(key, ctx.dataset.docs, (result.value as ChunkingStage).chunks, ctx.docIds);
  },
  failed: (unit, error) => ({ error: `chunking ${keyOf(unit)} failed: ${error}` }),
  /** Scheduling cost: the documents at the default 20,000 documents/s (as `estimate`). */
  cost: (_unit, ctx) => ctx.dataset.docs.length / 20_000,
  estimate: (_unit, est) => ({ seconds: est.documents / 20_000, basis: 'default 20,000 documents/s' }),
};

/** Warns about questions that cannot be answered on a chunking: every relevant document yields no chunk. */
function reportUnanswerable(key: string, docOf: ChunkDocMap, scored: Question[], config: SweepConfig, warn: (m: string) => void): void {
  if (config.level !== 'document') return;
  const bad = scored.filter((q) => Object.entries(q.relevant).every(([d, g]) => g < config.relevanceThreshold || !docOf.hasChunks(d)));
  if (bad.length > 0)
    warn(
      `chunking ${key}: ${bad.length} question(s) are unanswerable, every relevant document yields no chunk (empty text): ${bad
        .slice(0, 10)
        .map((q) => q.id)
        .join(', ')}${bad.length > 10 ? ', ...' : ''}`,
    );
}
