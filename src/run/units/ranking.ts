/**
 * What the ranking kinds (keyword, dense, fusion, external, run, rerank) share: reading and writing their checkpoint
 * (src/run/checkpoint.ts, validated like a live retriever's output, issue 24), mapping a returned id to the unit's
 * chunking, and the context a retriever factory receives. Not a kind itself.
 */
import path from 'node:path';
import type { PlanUnit } from '../../plan/graph.js';
import type { RetrieverFactory } from '../../retrieve/retriever.js';
import type { ChunkingStage, RankingValue, UnitContext, UnitInputs, UnitOutput, UnitResult } from './types.js';

/** The chunking stage a unit reads (its `chunking:*` input). @throws Error when the unit has none (a plan bug). */
export function chunkingOf(unit: PlanUnit, inputs: UnitInputs): ChunkingStage {
  const id = unit.inputs.find((i) => i.startsWith('chunking:'));
  const r = id === undefined ? undefined : inputs.get(id);
  if (!r || !('value' in r)) throw new Error(`unit ${unit.id} has no chunking among its inputs`);
  return r.value as ChunkingStage;
}

/**
 * Maps a returned id to a chunk id of the stage, or (document level) a document id; null when unknown. A whole-document
 * chunking maps a document id to its one chunk `<id>#0`. `allowUnknown` (imported runs with `labels: keep`): an unknown
 * id is kept at the document level.
 */
export function resolverOf(ctx: UnitContext, st: ChunkingStage, allowUnknown = false): (id: string) => string | null {
  const docOf = st.docOf;
  const whole = st.spec.size === null;
  const level = ctx.config.level;
  return (id: string): string | null => {
    if (docOf.isChunk(id)) return id;
    if (ctx.docIds.has(id)) {
      if (whole && docOf.isChunk(`${id}#0`)) return `${id}#0`;
      return level === 'document' ? id : null;
    }
    return allowUnknown && level === 'document' ? id : null;
  };
}

/** The context a retriever factory receives for chunking `st` (src/retrieve/retriever.ts). */
export function factoryContext(ctx: UnitContext, st: ChunkingStage, options: Record<string, unknown>): Parameters<RetrieverFactory>[0] {
  return {
    documents: ctx.dataset.docs,
    chunks: st.chunks,
    chunking: st.spec,
    chunkingKey: st.key,
    options,
    signal: ctx.signal,
    cacheDir: path.resolve(ctx.config.cacheDir),
  };
}

/**
 * A ranking read back from checkpoint `key` when it is intact and reaches `depth`: only what a live retriever of this
 * unit could have returned (ids of its chunking, one list per scored question); undefined otherwise.
 */
export function restoreRanking(key: string, depth: number, st: ChunkingStage, ctx: UnitContext): UnitResult | undefined {
  const resolve = resolverOf(ctx, st);
  const cp = ctx.store.get(key, depth, { questions: ctx.scored.length, isKnown: (id) => resolve(id) === id });
  if (!cp) return undefined;
  const value: RankingValue = { lists: cp.lists, buildSeconds: cp.buildSeconds, queryMs: cp.queryMs, fromCheckpoint: true, ...(cp.info ? { info: cp.info } : {}) };
  return { value, seconds: 0 };
}

/** Writes a computed ranking's checkpoint under `key` at `depth`. */
export function saveRanking(key: string, depth: number, result: UnitOutput, ctx: UnitContext): void {
  if (!('value' in result)) return;
  const { lists, buildSeconds, queryMs, info } = result.value as RankingValue;
  ctx.store.put(key, { lists, buildSeconds, queryMs, ...(info !== undefined ? { info } : {}), depth });
}

/** A computed ranking as a unit's result. */
export function computed(p: { lists: RankingValue['lists']; buildSeconds: number; queryMs: number; info?: Record<string, unknown> }): { value: RankingValue } {
  return { value: { ...p, fromCheckpoint: false } };
}

/** The restore and save of a ranking kind stored at the unit's plan depth. */
export const planDepthCheckpoint = {
  restore(key: string, unit: PlanUnit, inputs: UnitInputs, ctx: UnitContext): UnitResult | undefined {
    return restoreRanking(key, unit.depth!, chunkingOf(unit, inputs), ctx);
  },
  save(key: string, unit: PlanUnit, result: UnitOutput, ctx: UnitContext): void {
    saveRanking(key, unit.depth!, result, ctx);
  },
};
