/**
 * Unit kind `fusion` (`<ck>.hybrid[-<fusion key>].<label>`): the chunking's keyword lists and one model's dense lists
 * fused per question (src/retrieve/fusion.ts: RRF, Cormack et al. 2009, or the configured fusion), cut to the fusion
 * depth; no new search. Inputs: the dense unit, the keyword unit, the chunking (in that order: a row fails with the
 * dense unit's error first, as before the executor). Value: a `RankingValue` stored at the plan depth (so a later
 * sweep with a larger k reuses it), keyed with the dense unit's model keys filled in. Build seconds and query ms are
 * the sums of both inputs'.
 */
import { resolveKey, type PlanUnit } from '../../plan/graph.js';
import type { FusionSpec } from '../../types.js';
import { hybridRetriever, listRetriever } from '../../retrieve/builtin.js';
import { collectLists } from '../retrieve.js';
import type { EmbeddingHandle } from './embedding.js';
import { chunkingOf, computed, planDepthCheckpoint, resolverOf } from './ranking.js';
import { rankingOf, type Lists, type UnitContext, type UnitInputs, type UnitKindHandler } from './types.js';

/** The dense and keyword unit ids a fusion unit reads. */
function sources(unit: PlanUnit): { dense: string; keyword: string } {
  return { dense: unit.inputs.find((i) => !i.startsWith('chunking:') && !i.endsWith('.keyword'))!, keyword: unit.inputs.find((i) => i.endsWith('.keyword'))! };
}

/** The model label of the dense unit a fusion unit reads. */
const labelOf = (unit: PlanUnit, ctx: UnitContext) => ctx.unit(sources(unit).dense)!.params.model as string;

export const fusionUnit: UnitKindHandler = {
  kind: 'fusion',
  waitingFor: 'its fused lists',
  lane: (unit, ctx) => `model:${labelOf(unit, ctx)}`,
  async key(unit, _inputs, ctx) {
    const { modelKey } = (ctx.result(`embedding:${labelOf(unit, ctx)}`) as { value: EmbeddingHandle }).value;
    return resolveKey(unit, { 'semantic.documentKey': modelKey.documentKey, 'semantic.queryKey': modelKey.queryKey });
  },
  ...planDepthCheckpoint,
  async run(unit, inputs: UnitInputs, ctx) {
    const st = chunkingOf(unit, inputs);
    const { dense, keyword } = sources(unit);
    const kw = rankingOf(inputs.get(keyword))!;
    const sem = rankingOf(inputs.get(dense))!;
    const label = labelOf(unit, ctx);
    const retrieverName = unit.id.slice(st.key.length + 1, unit.id.length - label.length - 1);
    const byQuestion = (lists: Lists) => new Map(ctx.scored.map((q, j) => [q.id, lists[j]]));
    const retriever = hybridRetriever({
      keyword: listRetriever(byQuestion(kw.lists)),
      semantic: listRetriever(byQuestion(sem.lists)),
      fusion: unit.params.fusion as FusionSpec,
      depth: ctx.config.hybrid.depth,
    });
    const { lists, queryMs } = await collectLists(retrieverName, retriever, ctx.questionsIn, unit.depth!, { resolveId: resolverOf(ctx, st), signal: ctx.signal });
    return computed({ lists, buildSeconds: kw.buildSeconds + sem.buildSeconds, queryMs: queryMs + kw.queryMs + sem.queryMs });
  },
  estimate: () => ({ seconds: 0, basis: 'fusion of lists already computed (negligible)' }),
};
