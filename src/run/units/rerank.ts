/**
 * Unit kind `rerank` (`<ranking id>.rr-<label>-d<depth>`): a ranking's top `depth` hits rescored by a reranker and
 * ordered by the tie rule, the rest kept below in their order (src/rerank/apply.ts). Inputs: the chunking and the base
 * ranking. Each reranker is loaded once per sweep and shared by its units (a run-wide resource: a reranker that does
 * not load fails every unit of it, `reranker <label> could not be loaded: …`, warned once, before any base ranking is
 * looked at); each (question, chunk text) pair is scored once per reranker across the grid and cached in
 * `<cacheDir>/rerank.sqlite`. Value: a `RankingValue` checkpointed under a hash of the base lists and the reranker's
 * key, at the base lists' length. Latency = the base ranking's ms per query + the reranker's, measured afresh on 8
 * questions.
 */
import path from 'node:path';
import { createHash } from 'node:crypto';
import { resolveKey, type PlanUnit } from '../../plan/graph.js';
import type { Reranker, RerankSpec } from '../../rerank/types.js';
import { createReranker } from '../../rerank/registry.js';
import { RerankCache } from '../../rerank/cache.js';
import { measureRerankLatency, rerankLists } from '../../rerank/apply.js';
import { maxOf } from '../../bounded.js';
import { errorText } from '../inputs.js';
import { chunkingOf, computed, restoreRanking, saveRanking } from './ranking.js';
import { errorOf, progressFromZero, rankingOf, UnitFailure, type RankingValue, type UnitContext, type UnitInputs, type UnitKindHandler } from './types.js';
import { IdIndex } from '../../id-index.js';

/** A loaded reranker and what its units did (the manifest's `rerankers` entry). */
interface SharedReranker {
  reranker: Reranker;
  pairs: number;
  scored: number;
  scoreSeconds: number;
}

const labelOf = (unit: PlanUnit) => unit.params.label as string;
const baseIdOf = (unit: PlanUnit) => unit.inputs.find((i) => !i.startsWith('chunking:'))!;
const specOf = (unit: PlanUnit, ctx: UnitContext) => ctx.config.rerank.find((x): x is RerankSpec => x !== null && x.label === labelOf(unit))!;

/** The unit's reranker, loaded on first use. @throws UnitFailure when it does not load (warned once). */
function rerankerOf(unit: PlanUnit, ctx: UnitContext): Promise<SharedReranker> {
  const spec = specOf(unit, ctx);
  return ctx.shared<SharedReranker>(
    `reranker:${spec.label}`,
    async () => {
      try {
        ctx.emit({ kind: 'stage', stage: `rerank ${spec.label}`, detail: 'loading model' });
        return { reranker: await createReranker(spec, { cacheDir: path.resolve(ctx.config.cacheDir) }), pairs: 0, scored: 0, scoreSeconds: 0 };
      } catch (e) {
        const msg = `reranker ${spec.label} could not be loaded: ${errorText(e)}`;
        ctx.warn(msg);
        ctx.setInfo(`reranker:${spec.label}`, { label: spec.label, model: spec.model, error: msg });
        throw new UnitFailure(msg);
      }
    },
    async (s) => {
      ctx.setInfo(`reranker:${spec.label}`, { label: spec.label, model: spec.model, describe: s.reranker.describe(), stats: s.reranker.stats(), pairs: s.pairs, pairs_scored: s.scored, score_seconds: s.scoreSeconds });
      await s.reranker.close();
    },
  );
}

/** The base ranking; @throws UnitFailure with its error when it failed. */
function baseOf(unit: PlanUnit, inputs: UnitInputs): RankingValue {
  const r = inputs.get(baseIdOf(unit));
  const base = rankingOf(r);
  if (!base) throw new UnitFailure(errorOf(r) ?? `no results to rerank`);
  return base;
}

const depthOf = (base: RankingValue) => maxOf(base.lists.map((l) => l.length), 1);

export const rerankUnit: UnitKindHandler = {
  kind: 'rerank',
  waitingFor: 'its rescored lists',
  lane: (unit) => `rerank:${labelOf(unit)}`,
  optionalInputs: () => 'all',
  async key(unit, inputs, ctx) {
    const { reranker } = await rerankerOf(unit, ctx);
    const base = baseOf(unit, inputs);
    return resolveKey(unit, { base: createHash('sha256').update(JSON.stringify(base.lists)).digest('hex'), reranker: reranker.cacheKey() });
  },
  restore: (key, unit, inputs, ctx) => restoreRanking(key, depthOf(baseOf(unit, inputs)), chunkingOf(unit, inputs), ctx),
  save: (key, unit, result, ctx) => {
    const base = ctx.result(baseIdOf(unit));
    saveRanking(key, depthOf(rankingOf(base)!), result, ctx);
  },
  async run(unit, inputs, ctx) {
    const shared = await rerankerOf(unit, ctx);
    const base = baseOf(unit, inputs);
    const st = chunkingOf(unit, inputs);
    const spec = specOf(unit, ctx);
    const depth = unit.params.depth as number;
    const store = await ctx.shared('rerank-cache', async () => RerankCache.open(path.join(path.resolve(ctx.config.cacheDir), 'rerank.sqlite')), async (s) => s.close());
    // Objects, not texts: a text is read when a pair needs it (documents in a text store are read from the file then).
    // Tables of ids, not Maps: a Map cannot hold more than 2^24 chunks (src/id-index.ts).
    const { docs } = ctx.dataset;
    const chunks = st.chunks;
    const chunkById = IdIndex.over(chunks.length, (i) => chunks[i].id);
    const textOf = (x: string): string => {
      const c = chunkById.get(x);
      if (c !== undefined) return chunks[c].text;
      const d = ctx.docIds.get(x);
      return d === undefined ? '' : docs[d].text;
    };
    const out = await rerankLists(shared.reranker, ctx.questionsIn, base.lists, depth, textOf, {
      cache: store,
      concurrency: spec.baseUrl ? spec.concurrency : 1,
      signal: ctx.signal,
      onProgress: progressFromZero((e) => ctx.emit(e), `rerank ${spec.label} d${depth}`),
    });
    shared.pairs += out.stats.pairs;
    shared.scored += out.stats.cacheMisses;
    shared.scoreSeconds += out.stats.scoreSeconds;
    const latency = await measureRerankLatency(shared.reranker, ctx.questionsIn, base.lists, depth, textOf);
    return computed({ lists: out.lists, buildSeconds: base.buildSeconds, queryMs: base.queryMs + latency.msPerQuery, info: { rerank_ms_per_query: latency.msPerQuery } });
  },
  failed: (unit, error) => ({ error: `rerank ${labelOf(unit)} d${unit.params.depth as number} of ${baseIdOf(unit)} failed: ${error}` }),
  estimate: () => ({ seconds: null, basis: "a reranker's speed is not recorded yet" }),
};
