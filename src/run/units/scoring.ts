/**
 * Unit kind `scoring` (`scoring`): every row of the run scored from the rankings it cuts (a prefix of length k of each
 * list), with the level's judgements (document, chunk, or evidence spans projected onto each chunking once). Inputs:
 * every ranking unit a row reads (a failed one fails exactly its rows, with its message). Value: a {@link Scored}.
 * Never checkpointed: scoring is repeated every run (a re-run after labelling repeats only this unit). Pure over its
 * inputs; yields to the event loop every 50 rows so that its heartbeat still runs on a large grid.
 */
import type { Chunk, ConfigResult, ConfigSpec, Hit, Question, QueryDetail } from '../../types.js';
import type { SweepConfig } from '../../config/schema.js';
import { ROW_FAMILIES } from '../../config/schema.js';
import { rankingId } from '../../config/expand.js';
import { measuresAtK, rowMeasuresAt } from '../../score/measures.js';
import { prepareJudgements, planMeasures, scorePrepared, type MeasurePlan } from '../../score/evaluate.js';
import { projectEvidence, projectionStats, evaluateChunkLevel, type Projection, type ProjectionStats } from '../../score/evidence.js';
import { budgetValues, evidenceCoverage, atTokenBudget } from '../../score/budget.js';
import { annRecall } from '../../retrieve/lancedb.js';
import { errorText } from '../inputs.js';
import { exactListsOf } from './dense.js';
import type { ChunkingStage, Lists, RankingValue, UnitKindHandler } from './types.js';
import { chunkDocMap } from '../chunk-ids.js';
import { IdIndex } from '../../id-index.js';

/** A ranking unit's lists, or why it failed. */
type Ranking = RankingValue | { error: string };

/** What the scoring unit produces. */
export interface Scored {
  /** One result per row of the run, in row order. */
  configs: ConfigResult[];
  /** Every chunking of the run in plan order (a failed one with its error and no chunks). */
  stages: ChunkingStage[];
  /** Per-chunking projection statistics (evidence level; {} otherwise). */
  projectionStats: Record<string, ProjectionStats>;
  /** Chunk-level judgements per chunking key, question id and chunk id (levels chunk and evidence; {} otherwise). */
  chunkQrels: Record<string, Record<string, Record<string, number>>>;
}

export const scoringUnit: UnitKindHandler = {
  kind: 'scoring',
  waitingFor: 'the rows to be scored',
  lane: () => 'scoring',
  optionalInputs: () => 'all',
  key: async () => null,
  async run(_unit, _inputs, ctx) {
    const stages = new Map<string, ChunkingStage>();
    const rankings = new Map<string, Ranking>();
    const exactLists = new Map<string, Lists>();
    for (const u of ctx.plan.units) {
      const r = ctx.result(u.id);
      if (!r) continue;
      if (u.kind === 'chunking') {
        const key = u.id.slice('chunking:'.length);
        const spec = { size: u.params.size as number | null, overlap: u.params.overlap as number };
        stages.set(key, 'value' in r ? (r.value as ChunkingStage) : { spec, key, chunks: [], docOf: chunkDocMap(new Map(), []), seconds: 0, error: r.error });
      } else if (u.kind !== 'embedding' && u.kind !== 'scoring') {
        rankings.set(u.id, 'value' in r ? (r.value as RankingValue) : { error: r.error });
        // ANN error (issue 12 §6): an ivf_pq unit is measured against the exact lists of the same model and chunking.
        if ((u.params.index as { type?: string } | undefined)?.type === 'ivf_pq' && 'value' in r) {
          const exact = exactListsOf(u, (id) => ctx.result(id), (m) => ctx.warn(m));
          if (exact) exactLists.set(u.id, exact.lists);
        }
      }
    }
    const scored = ctx.scored;
    const scorer = makeScorer(ctx.config, [...stages.values()], scored);
    const configs: ConfigResult[] = [];
    const rows = ctx.rows;
    for (const [i, spec] of rows.entries()) {
      if (i % 50 === 0) {
        ctx.emit({ kind: 'progress', stage: 'score', done: i, total: rows.length });
        if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      }
      configs.push(scoreRow(spec, stages, rankings, scored, scorer, exactLists));
    }
    ctx.emit({ kind: 'progress', stage: 'score', done: rows.length, total: rows.length });
    const value: Scored = { configs, stages: [...stages.values()], projectionStats: scorer.projectionStats(), chunkQrels: ctx.config.level === 'document' ? {} : scorer.chunkQrels() };
    return { value };
  },
  estimate: (_unit, est) => ({ seconds: est.questions / 50_000, basis: 'default 50,000 question-rows/s per row' }),
};

/** Scores one question's top-k chunks; built once per sweep, holding everything that does not depend on the row. */
interface Scorer {
  /** `full` is the question's whole stored list (up to the largest k); the row scores its first `k`. */
  score(stage: ChunkingStage, j: number, full: Hit[], k: number): { values: Record<string, number>; firstRelevantRank: number | null };
  projectionStats(): Record<string, ProjectionStats>;
  /** Chunk-level judgements per chunking key, question id and chunk id (levels chunk and evidence; {} otherwise). */
  chunkQrels(): Record<string, Record<string, Record<string, number>>>;
}

function makeScorer(config: SweepConfig, stages: ChunkingStage[], scored: Question[]): Scorer {
  const threshold = config.relevanceThreshold;
  const plans = new Map<number, MeasurePlan>();
  const planAt = (k: number) => {
    let p = plans.get(k);
    if (!p) plans.set(k, (p = planMeasures(measuresAtK(k, ROW_FAMILIES))));
    return p;
  };
  if (config.level === 'document' || config.level === 'chunk') {
    // judged@k (and with unjudged.condensed the *_condensed@k columns) beside the row families (issue 20)
    const rowPlans = new Map<number, MeasurePlan>();
    const rowPlanAt = (k: number) => {
      let p = rowPlans.get(k);
      if (!p) rowPlans.set(k, (p = planMeasures(rowMeasuresAt(k, ROW_FAMILIES, { condensed: config.unjudged?.condensed === true }))));
      return p;
    };
    const prepared = scored.map((q) =>
      prepareJudgements(config.level === 'document' ? q.relevant : (q.chunkLabels ?? {}), { relevanceThreshold: threshold }),
    );
    return {
      score(stage, j, full, k) {
        const hits = full.length > k ? full.slice(0, k) : full;
        const ids = config.level === 'document' ? hits.map((h) => stage.docOf.get(h.id) ?? h.id) : hits.map((h) => h.id);
        return scorePrepared(ids, prepared[j], rowPlanAt(k));
      },
      projectionStats: () => ({}),
      chunkQrels() {
        if (config.level !== 'chunk') return {};
        const out: Record<string, Record<string, Record<string, number>>> = {};
        for (const st of stages) if (!st.error) out[st.key] = Object.fromEntries(scored.map((q) => [q.id, { ...(q.chunkLabels ?? {}) }]));
        return out;
      },
    };
  }
  // Evidence level: project every question's spans onto each chunking once.
  // Only the chunks of documents some span names enter byDoc, and the chunk ids are indexed by an IdIndex: a Map of
  // every chunk stops at 2^24 entries (issue 25: 17.8 million chunks).
  const evidenceDocs = new Set(scored.flatMap((q) => q.evidence.map((e) => e.doc)));
  const projections = new Map<string, Projection[]>();
  const chunkById = new Map<string, { get(id: string): Chunk | undefined }>();
  const projectionsOf = (stage: ChunkingStage): Projection[] => {
    let p = projections.get(stage.key);
    if (!p) {
      const byDoc = new Map<string, Chunk[]>();
      const chunks = stage.chunks;
      const index = IdIndex.over(chunks.length, (i) => chunks[i].id);
      for (const c of chunks) {
        if (!evidenceDocs.has(c.docId)) continue;
        let list = byDoc.get(c.docId);
        if (!list) byDoc.set(c.docId, (list = []));
        list.push(c);
      }
      chunkById.set(stage.key, {
        get(id: string): Chunk | undefined {
          const i = index.get(id);
          return i === undefined ? undefined : chunks[i];
        },
      });
      p = scored.map((q) => projectEvidence(q.evidence, byDoc, { minOverlap: config.evidenceOverlap }));
      projections.set(stage.key, p);
    }
    return p;
  };
  return {
    score(stage, j, full, k) {
      const projection = projectionsOf(stage)[j];
      const ids = full.slice(0, k).map((h) => h.id);
      const s = evaluateChunkLevel(ids, projection, k, { relevanceThreshold: threshold });
      const values: Record<string, number> = s
        ? s.values
        : Object.fromEntries(planAt(k).names.map((n) => [n, 0]));
      const byId = chunkById.get(stage.key)!;
      const chunks = ids.map((id) => byId.get(id)!).filter(Boolean);
      Object.assign(values, budgetValues(evidenceCoverage(chunks, scored[j].evidence), k));
      // Equal token budgets: the longest prefix of the whole stored list that fits in B tokens (same for every k).
      const ranked = full.map((h) => byId.get(h.id)!).filter(Boolean);
      for (const b of config.evidenceBudgets)
        values[`evidence_recall@${b}t`] = evidenceCoverage(atTokenBudget(ranked, b), scored[j].evidence).evidenceRecall;
      return { values, firstRelevantRank: s ? s.firstRelevantRank : null };
    },
    projectionStats() {
      const out: Record<string, ProjectionStats> = {};
      for (const st of stages) if (!st.error) out[st.key] = projectionStats(projectionsOf(st));
      return out;
    },
    chunkQrels() {
      const out: Record<string, Record<string, Record<string, number>>> = {};
      for (const st of stages) {
        if (st.error) continue;
        const p = projectionsOf(st);
        out[st.key] = Object.fromEntries(scored.map((q, j) => [q.id, { ...p[j].chunkGrades }]));
      }
      return out;
    },
  };
}

/**
 * Scores one grid row from its ranking unit (a prefix of length k of each list). A row whose ranking (without its
 * rerank part) is an approximate (ivf_pq) unit also gets `ann_recall@<k>` per question and in its means: the share of
 * the exact top-k the index returned (`annRecall`, src/retrieve/lancedb.ts), measured on the un-reranked lists, so a
 * reranked row reports the loss of the index it reranks.
 */
function scoreRow(
  spec: ConfigSpec,
  stages: Map<string, ChunkingStage>,
  rankings: Map<string, Ranking>,
  scored: Question[],
  scorer: Scorer,
  exactLists: Map<string, Lists> = new Map(),
): ConfigResult {
  const failed = (error: string): ConfigResult => ({
    config: spec,
    status: 'failed',
    error,
    means: {},
    questions: 0,
    buildSeconds: 0,
    meanQueryMs: 0,
    perQuery: [],
  });
  const st = stages.get(spec.chunkingKey);
  if (!st) return failed(`no chunking ${spec.chunkingKey}`);
  if (st.error) return failed(st.error);
  const ranking = rankings.get(rankingId(spec));
  if (!ranking) return failed(`no ${spec.retriever} results on ${spec.chunkingKey}`);
  if ('error' in ranking) return failed(ranking.error);
  const lists = ranking.lists;
  try {
    const baseId = rankingId({ ...spec, rerank: null });
    const exact = exactLists.get(baseId);
    const approx = exact ? rankings.get(baseId) : undefined;
    const ann = exact && approx && 'lists' in approx ? annRecall(exact, approx.lists, spec.k) : undefined;
    const perQuery: QueryDetail[] = [];
    const sums = new Map<string, number>();
    for (const [j, q] of scored.entries()) {
      const hits = lists[j].slice(0, spec.k);
      const s = scorer.score(st, j, lists[j], spec.k);
      if (ann) s.values[`ann_recall@${spec.k}`] = ann[j];
      for (const name in s.values) sums.set(name, (sums.get(name) ?? 0) + s.values[name]);
      perQuery.push({
        qid: q.id,
        retrieved: hits.map((h) => ({ chunkId: h.id, docId: st.docOf.get(h.id) ?? h.id, score: h.score })),
        firstRelevantRank: s.firstRelevantRank,
        metrics: s.values,
      });
    }
    const means: Record<string, number> = {};
    for (const [name, sum] of sums) means[name] = scored.length === 0 ? 0 : sum / scored.length;
    return {
      config: spec,
      status: 'ok',
      means,
      questions: scored.length,
      buildSeconds: st.seconds + ranking.buildSeconds,
      meanQueryMs: ranking.queryMs,
      perQuery,
    };
  } catch (e) {
    return failed(`scoring failed: ${errorText(e)}`);
  }
}

