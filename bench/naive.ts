/**
 * The naive baseline: what a user of LlamaIndex would write to sweep semantic configurations without this harness.
 * For every configuration (chunking × model × k) a fresh `VectorStoreIndex` (llamaindex 0.12.1, default in-memory
 * `SimpleVectorStore`) is built from that chunking's nodes, embedding every node again through
 * {@link CountingProviderEmbedding} (our provider behind LlamaIndex's `BaseEmbedding`, no cache), and queried once per
 * question with `asRetriever({ similarityTopK: k })`.
 *
 * LlamaIndex quirks that matter for comparing with the harness (see docs/bench.md):
 * - `SimpleVectorStore` scores cosine in float64 over `number[]` (`@llamaindex/core/embeddings` `similarity`); the
 *   harness scores in float32 (src/retrieve/semantic.ts). Scores differ by ~1e-7, which can swap near-ties.
 * - Equal scores keep insertion order (`Array.prototype.sort` is stable, comparator `b - a`); the harness breaks
 *   ties by id descending.
 * - A zero vector (a text with no known GloVe word) gives cosine 0/0 = NaN in LlamaIndex (the harness scores it 0),
 *   and NaN makes the sort comparator inconsistent.
 * - `BaseEmbedding` embeds `node.getContent(MetadataMode.EMBED)`, which is `text.trim()` when a node has no metadata;
 *   our chunks are passed with no metadata, so a chunk with leading/trailing whitespace is embedded trimmed.
 * - Queries are embedded one at a time (`getQueryEmbedding` per `retrieve` call).
 */
import { performance } from 'node:perf_hooks';
import { Settings, TextNode, VectorStoreIndex } from 'llamaindex';
import { ProviderEmbedding } from '../src/retrieve/llamaindex.js';
import type { EmbeddingProvider } from '../src/embed/provider.js';
import type { Chunk, Question } from '../src/types.js';
import { measuresAtK } from '../src/score/measures.js';
import { scoreRanking } from '../src/score/evaluate.js';
import { ROW_FAMILIES } from '../src/config/schema.js';

/** Time and texts that went through one {@link ProviderEmbedding}. */
export interface ProviderEmbeddingStats {
  /** Texts sent with the document role. */
  documentTexts: number;
  /** Texts sent with the query role. */
  queryTexts: number;
  /** Wall seconds inside `provider.embedBatch` (both roles). */
  embedSeconds: number;
}

/**
 * One of our providers behind LlamaIndex's embedding interface, with NO cache (the library's own adapter,
 * src/retrieve/llamaindex.ts), counting texts and the seconds inside `provider.embedBatch`. Vectors are `number[]`
 * (float32 values widened exactly); `embedBatchSize` (default 32, the harness's default) is the batch LlamaIndex uses.
 */
export class CountingProviderEmbedding extends ProviderEmbedding {
  readonly stats: ProviderEmbeddingStats = { documentTexts: 0, queryTexts: 0, embedSeconds: 0 };

  protected override async embed(texts: string[], role: 'document' | 'query'): Promise<number[][]> {
    const t0 = performance.now();
    const out = await super.embed(texts, role);
    this.stats.embedSeconds += (performance.now() - t0) / 1000;
    if (role === 'document') this.stats.documentTexts += texts.length;
    else this.stats.queryTexts += texts.length;
    return out;
  }
}

/** One naive configuration's outcome. */
export interface NaiveConfigResult {
  /** Readable id, the same as the harness's row id (`cs128-ov16.semantic.use-lite.k5`). */
  id: string;
  k: number;
  /** Seconds to build the VectorStoreIndex (node objects, embedding every node, inserting into the store). */
  buildSeconds: number;
  /** Seconds for all questions' `retrieve` calls (query embedding + float64 cosine over every node + sort). */
  querySeconds: number;
  /** Seconds to score the rankings (same scorer as the sweep). */
  scoreSeconds: number;
  /** Means per canonical measure name (`ndcg@5`, ...), over the questions, scored like the sweep's document level. */
  means: Record<string, number>;
  /** Per question, the retrieved chunk ids in LlamaIndex's order (rank = index + 1). */
  rankings: string[][];
  /** Per question, LlamaIndex's similarity scores aligned with `rankings`. */
  scores: number[][];
  /** Texts embedded in this configuration (documents, queries). */
  embeddedDocuments: number;
  embeddedQueries: number;
  /** Wall seconds inside `provider.embedBatch` in this configuration (index build and queries). */
  embedSeconds: number;
  /** Rankings holding a NaN score (zero vectors). */
  nanScores: number;
}

/**
 * Runs the naive loop for one chunking and one model over the given k values (one fresh index per k, as the naive
 * grid does). `chunkingKey` and `label` only build the ids. Questions are scored at document level with
 * `scoreRanking` (chunk → document through `Chunk.docId`, relevance threshold 1), as the sweep scores its rows.
 * Changes LlamaIndex's embedding model only inside `Settings.withEmbedModel` (no global setting is left behind).
 */
export async function runNaiveSemantic(args: {
  provider: EmbeddingProvider;
  label: string;
  chunkingKey: string;
  chunks: readonly Chunk[];
  questions: readonly Question[];
  ks: readonly number[];
  batchSize?: number;
  onConfig?: (r: NaiveConfigResult) => void;
}): Promise<NaiveConfigResult[]> {
  const docOf = new Map(args.chunks.map((c) => [c.id, c.docId] as const));
  const out: NaiveConfigResult[] = [];
  for (const k of args.ks) {
    const embedModel = new CountingProviderEmbedding(args.provider, args.batchSize ?? 32);
    const result = await Settings.withEmbedModel(embedModel, async () => {
      const t0 = performance.now();
      const nodes = args.chunks.map((c) => new TextNode({ id_: c.id, text: c.text }));
      const index = await VectorStoreIndex.init({ nodes });
      const buildSeconds = (performance.now() - t0) / 1000;
      const retriever = index.asRetriever({ similarityTopK: k });
      const t1 = performance.now();
      const rankings: string[][] = [];
      const scores: number[][] = [];
      for (const q of args.questions) {
        const hits = await retriever.retrieve({ query: q.text });
        rankings.push(hits.map((h) => h.node.id_));
        scores.push(hits.map((h) => h.score ?? Number.NaN));
      }
      const querySeconds = (performance.now() - t1) / 1000;
      return { buildSeconds, querySeconds, rankings, scores };
    });
    const t2 = performance.now();
    const measures = measuresAtK(k, ROW_FAMILIES);
    const sums = new Map<string, number>();
    args.questions.forEach((q, j) => {
      const ids = result.rankings[j].map((id) => docOf.get(id) ?? id);
      const s = scoreRanking(ids, q.relevant, measures, { relevanceThreshold: 1 });
      for (const name in s.values) sums.set(name, (sums.get(name) ?? 0) + s.values[name]);
    });
    const means: Record<string, number> = {};
    for (const [name, sum] of sums) means[name] = args.questions.length === 0 ? 0 : sum / args.questions.length;
    const r: NaiveConfigResult = {
      id: `${args.chunkingKey}.semantic.${args.label}.k${k}`,
      k,
      buildSeconds: result.buildSeconds,
      querySeconds: result.querySeconds,
      scoreSeconds: (performance.now() - t2) / 1000,
      means,
      rankings: result.rankings,
      scores: result.scores,
      embeddedDocuments: embedModel.stats.documentTexts,
      embeddedQueries: embedModel.stats.queryTexts,
      embedSeconds: embedModel.stats.embedSeconds,
      nanScores: result.scores.filter((l) => l.some((s) => Number.isNaN(s))).length,
    };
    args.onConfig?.(r);
    out.push(r);
  }
  return out;
}

/** How the naive and the harness's metric means compare over the configurations both ran. */
export interface MetricComparison {
  /** Configurations compared. */
  configs: number;
  /** (configuration, measure) pairs compared. */
  values: number;
  /** Pairs whose absolute difference exceeds `tolerance`. */
  differing: number;
  /** Largest absolute difference over all pairs (0 when all are equal). */
  maxAbsDiff: number;
  /** Pairs that differ, largest first (at most 20). */
  worst: { id: string; measure: string; naive: number; harness: number; diff: number }[];
  /** Measures missing on one side, as `id measure` strings. */
  missing: string[];
}

/**
 * Compares metric means of the same configurations (matched by id). A pair counts as differing when
 * |naive − harness| > `tolerance` (default 1e-12: means are sums of the same float64 per-question values, so only a
 * changed ranking moves them). Pure.
 */
export function compareMeans(
  naive: readonly { id: string; means: Record<string, number> }[],
  harness: ReadonlyMap<string, Record<string, number>>,
  tolerance = 1e-12,
): MetricComparison {
  let values = 0;
  let configs = 0;
  let maxAbsDiff = 0;
  const diffs: MetricComparison['worst'] = [];
  const missing: string[] = [];
  for (const n of naive) {
    const h = harness.get(n.id);
    if (!h) {
      missing.push(`${n.id} (no harness row)`);
      continue;
    }
    configs++;
    const names = new Set([...Object.keys(n.means), ...Object.keys(h)]);
    for (const m of names) {
      if (!(m in n.means) || !(m in h)) {
        missing.push(`${n.id} ${m}`);
        continue;
      }
      values++;
      const diff = Math.abs(n.means[m] - h[m]);
      if (diff > maxAbsDiff) maxAbsDiff = diff;
      if (diff > tolerance) diffs.push({ id: n.id, measure: m, naive: n.means[m], harness: h[m], diff });
    }
  }
  diffs.sort((a, b) => b.diff - a.diff || (a.id < b.id ? -1 : a.id > b.id ? 1 : a.measure < b.measure ? -1 : 1));
  return { configs, values, differing: diffs.length, maxAbsDiff, worst: diffs.slice(0, 20), missing };
}

/**
 * How the naive and the harness's top-k chunk lists differ per question (same configuration): `sameOrder` = identical
 * lists, `sameSet` = the same chunks in another order (ties or near-ties), `different` = other chunks. Pure.
 */
export function compareRankings(naive: readonly string[][], harness: readonly string[][]): { sameOrder: number; sameSet: number; different: number } {
  let sameOrder = 0;
  let sameSet = 0;
  let different = 0;
  for (let j = 0; j < naive.length; j++) {
    const a = naive[j];
    const b = harness[j] ?? [];
    if (a.length === b.length && a.every((id, i) => id === b[i])) sameOrder++;
    else if (a.length === b.length && new Set([...a, ...b]).size === a.length) sameSet++;
    else different++;
  }
  return { sameOrder, sameSet, different };
}
