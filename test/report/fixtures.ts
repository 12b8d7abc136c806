/**
 * Synthetic SweepResult builders for the report and statistics tests. Everything is built in code from values a
 * test states; nothing is read from disk.
 */
import type { ConfigResult, ConfigSpec, FusionSpec, Mode, QueryDetail, Question, RerankStage, SweepResult } from '../../src/types.js';
import { seededRandom } from '../../src/score/stats.js';

export const FAMILIES = ['hit_rate', 'recall', 'precision', 'mrr', 'ndcg', 'ndcg_exp', 'map'] as const;

/** A question with document labels. */
export function question(id: string, relevant: Record<string, number>, tags: string[] = [], text = `question ${id}`): Question {
  return { id, text, relevant, evidence: [], tags, line: 0 };
}

/**
 * A configuration spec with a readable id. A hybrid row gets plain RRF (key `rrf`) unless `fusion` is given; its
 * retriever part is then `hybrid-<fusion key>` (plain `hybrid` for `rrf`), as the grid names it.
 */
export function spec(o: {
  chunkingKey?: string;
  mode?: Mode;
  embedding?: string | null;
  k: number;
  id?: string;
  fusion?: FusionSpec;
  rerank?: RerankStage | null;
}): ConfigSpec {
  const chunkingKey = o.chunkingKey ?? 'none';
  const mode = o.mode ?? 'keyword';
  const embedding = mode === 'keyword' ? null : (o.embedding ?? 'use-lite');
  const m = /^cs(\d+)-ov(\d+)$/.exec(chunkingKey);
  const fusion: FusionSpec | null = mode === 'hybrid' ? (o.fusion ?? { method: 'rrf', k: 60, key: 'rrf' }) : null;
  const retriever = fusion && fusion.key !== 'rrf' ? `hybrid-${fusion.key}` : mode;
  const rerank = o.rerank ?? null;
  return {
    id: o.id ?? [chunkingKey, retriever, embedding, rerank ? `rr-${rerank.label}-d${rerank.depth}` : null, `k${o.k}`].filter(Boolean).join('.'),
    chunkingKey,
    chunking: m ? { size: Number(m[1]), overlap: Number(m[2]) } : { size: null, overlap: 0 },
    mode,
    retriever,
    embedding,
    fusion,
    rerank,
    k: o.k,
  };
}

/** A convex-fusion spec: `cvx-mm-a<alpha>` (min-max normalisation). */
export function convex(alpha: number): FusionSpec {
  return { method: 'convex', alpha, normalize: 'minmax', key: `cvx-mm-a${alpha}` };
}

/**
 * An ok row. `values[family]` gives the per-question values (question order) for that family at the row's k; families
 * not given copy `values.ndcg` (or 0). `retrieved[j]` is question j's list; `firstRelevant[j]` its first relevant rank.
 * Means are computed here as plain sums / n, so tests can state them by hand.
 */
export function row(
  s: ConfigSpec,
  qs: Question[],
  values: Partial<Record<string, number[]>>,
  extra: { retrieved?: QueryDetail['retrieved'][]; firstRelevant?: (number | null)[]; buildSeconds?: number; meanQueryMs?: number } = {},
): ConfigResult {
  const base = values.ndcg ?? qs.map(() => 0);
  const perQuery: QueryDetail[] = qs.map((q, j) => {
    const metrics: Record<string, number> = {};
    for (const f of FAMILIES) metrics[`${f}@${s.k}`] = (values[f] ?? base)[j];
    return {
      qid: q.id,
      retrieved: extra.retrieved?.[j] ?? [],
      firstRelevantRank: extra.firstRelevant ? extra.firstRelevant[j] : metrics[`hit_rate@${s.k}`] > 0 ? 1 : null,
      metrics,
    };
  });
  const means: Record<string, number> = {};
  for (const f of FAMILIES) {
    const name = `${f}@${s.k}`;
    means[name] = perQuery.reduce((a, d) => a + d.metrics[name], 0) / Math.max(1, qs.length);
  }
  return {
    config: s,
    status: 'ok',
    means,
    questions: qs.length,
    buildSeconds: extra.buildSeconds ?? 0.5,
    meanQueryMs: extra.meanQueryMs ?? 1.25,
    perQuery,
  };
}

/** A failed row. */
export function failedRow(s: ConfigSpec, error: string): ConfigResult {
  return { config: s, status: 'failed', error, means: {}, questions: 0, buildSeconds: 0, meanQueryMs: 0, perQuery: [] };
}

/** A SweepResult around the given rows. */
export function sweep(
  qs: Question[],
  configs: ConfigResult[],
  o: { primaryMetric?: string; name?: string; manifest?: Record<string, unknown>; excluded?: SweepResult['excluded']; warnings?: string[] } = {},
): SweepResult {
  return {
    name: o.name ?? 'fixture',
    createdAt: '2025-01-01T00:00:00.000Z',
    primaryMetric: o.primaryMetric ?? 'ndcg@5',
    level: 'document',
    configs,
    questions: qs,
    excluded: o.excluded ?? [],
    ...(o.warnings ? { warnings: o.warnings } : {}),
    manifest: o.manifest ?? {
      dataset: { name: 'fixture', fingerprint: 'abc123', docs: 10, questions: qs.length },
      relevanceThreshold: 1,
      tieRule: 'score descending, then id descending',
      bm25: { k1: 1.2, b: 0.75 },
      hybrid: { rrfK: 60, depth: 50 },
    },
  };
}

/**
 * A large random sweep for the speed check: `nq` questions, chunkings × modes × models × ks rows, each with 7 metrics
 * and k retrieved results; the values are seeded noise around a per-row level.
 */
export function bigSweep(nq: number, ks: number[], chunkings: string[], models: string[], seed = 7): SweepResult {
  const rand = seededRandom(seed);
  const qs = Array.from({ length: nq }, (_, j) =>
    question(`q${j}`, { [`folder${j % 4}/doc${j}.md`]: 1, [`folder${(j + 1) % 4}/doc${j + 1}.md`]: 2 }, j % 3 === 0 ? ['paraphrase'] : ['part-number']),
  );
  const rows: ConfigResult[] = [];
  const retrievers: [Mode, string | null][] = [['keyword', null]];
  for (const m of models) retrievers.push(['semantic', m], ['hybrid', m]);
  for (const c of chunkings)
    for (const [mode, emb] of retrievers)
      for (const k of ks) {
        const level = 0.3 + 0.4 * rand();
        const vals: Record<string, number[]> = {};
        for (const f of FAMILIES) vals[f] = qs.map(() => Math.min(1, Math.max(0, level + (rand() - 0.5) * 0.8)));
        const retrieved = qs.map((_, j) =>
          Array.from({ length: k }, (_, r) => {
            const doc = `folder${(j + r) % 4}/doc${j + r}.md`;
            return { chunkId: `${doc}#${r}`, docId: doc, score: mode === 'semantic' ? 0.9 - r * 0.03 - rand() * 0.2 : 10 - r };
          }),
        );
        rows.push(row(spec({ chunkingKey: c, mode, embedding: emb, k }), qs, vals, { retrieved }));
      }
  return sweep(qs, rows, { primaryMetric: `ndcg@${ks[Math.min(1, ks.length - 1)]}` });
}
