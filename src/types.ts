/**
 * Shared data shapes that flow load → chunk → embed → retrieve → score → report.
 * Everything here is plain data: no methods, no classes, safe to serialise.
 *
 * Units: character offsets are UTF-16 code-unit offsets into `Doc.text` (JavaScript string indices), half-open
 * `[start, end)`. Chunk sizes are in tokens of the chunking tokenizer. Ranks are 1-based.
 */

/** A loaded document. `text` is exactly the text that chunk offsets and evidence ranges refer to. */
export interface Doc {
  /** Path relative to the docs folder with forward slashes (`faq/payments.md`), or a BEIR `_id`. */
  id: string;
  /** The full text as loaded (for BEIR: `title + "\n\n" + text` when the title is non-empty). */
  text: string;
}

/** One evidence passage of a question, resolved to a character range of its document. */
export interface EvidenceSpan {
  /** Document id. */
  doc: string;
  /** Start offset in `Doc.text`, inclusive, 0-based. */
  start: number;
  /** End offset in `Doc.text`, exclusive; `end > start`. */
  end: number;
  /** Grade ≥ 1 (default 1). */
  grade: number;
  /** The quote as written in questions.jsonl, when the span was given as a quote. */
  quote?: string;
}

/** A labelled question. */
export interface Question {
  id: string;
  /** The question text sent to the retriever. */
  text: string;
  /** Document-level judgements: document id → grade. Grade 0 means judged not relevant. */
  relevant: Record<string, number>;
  /** Evidence spans (issue: labels that survive re-chunking). Empty when the question has none. */
  evidence: EvidenceSpan[];
  /** Chunk-id labels (`refunds.md#2` → grade), valid only for the chunking the dataset fixes. */
  chunkLabels?: Record<string, number>;
  /** Free-form tags such as `paraphrase`, `part-number`, `adversarial`. */
  tags: string[];
  /** 1-based line in questions.jsonl (or queries.jsonl for BEIR); 0 when not from a file. */
  line: number;
}

/** A dataset ready to sweep. */
export interface Dataset {
  /** Display name (folder name unless the config names it). */
  name: string;
  /** Absolute path of the dataset folder. */
  root: string;
  layout: 'folder' | 'beir';
  /** BEIR split (`test`), when layout is `beir`. */
  split?: string;
  /** Documents sorted by id (code-unit order). */
  docs: Doc[];
  /** Questions in file order. */
  questions: Question[];
  /** sha256 hex over the sorted document ids and texts and the questions as loaded (src/load/fingerprint.ts `fingerprintDataset`). */
  fingerprint: string;
  /**
   * sha256 hex over the sorted document ids and texts only (src/load/fingerprint.ts `fingerprintCorpus`), computed by
   * the loader with `fingerprint` without reading the texts again (issue 25). Optional: when absent (a dataset built by
   * hand), consumers compute it from `docs` (`corpusFingerprintOf`). Whoever replaces `docs` must replace or drop it.
   */
  corpusFingerprint?: string;
  /** Non-fatal findings (collapsed exact duplicate questions, repeated labels, ...). */
  warnings: string[];
  /** Set when `dataset.sample` was given (src/load/sample.ts); `docs` and both fingerprints are then the sample's. */
  sample?: DatasetSample;
}

/** What `dataset.sample` kept (src/load/sample.ts `sampleDataset`), as recorded in the manifest's `dataset.sample`. */
export interface DatasetSample {
  /** `documents` asked for, ≥ 1. */
  documents: number;
  /** Seed of the draw of the other documents. */
  seed: number;
  /** Documents named by any label (any grade, 0 included), all kept. */
  judged: number;
  /** Documents in the sample: judged + drawn others = min(max(documents, judged), total). */
  kept: number;
  /** Documents in the full corpus. */
  total: number;
}

/** How documents are cut into chunks. `size: null` means one chunk per whole document. */
export interface ChunkingSpec {
  /** Chunk size in tokens of the chunking tokenizer, ≥ 1; `null` = whole document (`none`). */
  size: number | null;
  /** Overlap in tokens, 0 ≤ overlap < size; 0 when size is null. */
  overlap: number;
}

/** A chunk of a document. */
export interface Chunk {
  /** `<docId>#<ordinal>`, deterministic. */
  id: string;
  docId: string;
  /** 0-based position of the chunk within its document. */
  ordinal: number;
  text: string;
  /** Character range of the chunk in `Doc.text`, `[start, end)`; `Doc.text.slice(start, end) === text`. */
  start: number;
  end: number;
  /** Number of tokens in `text` under the chunking tokenizer. */
  tokens: number;
}

/** A retrieved chunk with its retriever score. Higher scores are better. */
export interface Hit {
  /** Chunk id. */
  id: string;
  score: number;
}

/**
 * Retriever families. `keyword`, `semantic` and `hybrid` are the built-ins; `external` is a user's retriever module
 * (config `retrievers:`) or an object passed to `runSweep`; `run` is a TREC run file scored as it is (config `runs:`).
 * The open part is {@link ConfigSpec.retriever}: any name a user gives.
 */
export type Mode = 'keyword' | 'semantic' | 'hybrid' | 'external' | 'run';

/**
 * How a hybrid row combines its keyword and semantic lists (each cut to `hybrid.depth`).
 * - `rrf`: Σ w_L / (k + rank_L), w_sem = `weight`, w_kw = 1 − `weight` (plain RRF when `weight` is absent: both 1).
 * - `convex`: `alpha`·norm(s_sem) + (1 − `alpha`)·norm(s_kw) with `normalize` ∈ minmax | zscore | dbsf.
 */
export interface FusionSpec {
  method: 'rrf' | 'convex';
  /** RRF constant (rrf only), ≥ 0; default 60. */
  k?: number;
  /** Semantic list's weight in weighted RRF (rrf only), in [0, 1]; absent = plain RRF. */
  weight?: number;
  /** Semantic list's weight (convex only), in [0, 1]. */
  alpha?: number;
  /** Score normalisation (convex only). */
  normalize?: 'minmax' | 'zscore' | 'dbsf';
  /** Short id part: `rrf` (k 60, unweighted), `rrf-k10`, `rrf-k60-w0.3`, `cvx-mm-a0.5`, `cvx-z-a0.25`, `cvx-dbsf-a1`. */
  key: string;
}

/** The rerank stage of a row: which reranker rescored how many of the top hits. */
export interface RerankStage {
  /** Reranker label (config `label`, or derived from the model). */
  label: string;
  /** As written in the config (`transformers:./models/x`, `rerank:bge-reranker-base`). */
  model: string;
  /** How many top hits were rescored, ≥ 1. */
  depth: number;
}

/** One cell of the grid (a configuration). */
export interface ConfigSpec {
  /**
   * Readable id `<chunking>.<retriever>[.<embedding>][.rr-<rerank label>-d<depth>].k<k>`, e.g.
   * `cs256-ov32.hybrid.use-lite.k5`, `none.keyword.k10`, `cs256-ov16.hybrid-cvx-mm-a0.5.use-lite.k10`, `none.words.k5`.
   */
  id: string;
  /** `none` or `cs<size>-ov<overlap>`. */
  chunkingKey: string;
  chunking: ChunkingSpec;
  mode: Mode;
  /**
   * The retriever part of the id: `keyword`, `semantic`, `hybrid` (RRF k 60) or `hybrid-<fusion key>`, or the name
   * of an external retriever or run.
   */
  retriever: string;
  /** Embedding model label (`use-lite`, `glove-100d`, `tf-minilm`; the config entry's `label`), or null when none is used. */
  embedding: string | null;
  /** Fusion of a hybrid row; null otherwise. */
  fusion: FusionSpec | null;
  /** Rerank stage; null when the row is not reranked. */
  rerank: RerankStage | null;
  /** Top-k, ≥ 1. */
  k: number;
}

/** One question's outcome in one configuration. */
export interface QueryDetail {
  /** Question id. */
  qid: string;
  /** The top-k chunks in rank order (rank = index + 1), with the document each belongs to. */
  retrieved: { chunkId: string; docId: string; score: number }[];
  /** 1-based rank of the first slot credited as relevant (within k), or null when none is. */
  firstRelevantRank: number | null;
  /** Metric values keyed by canonical measure name at this configuration's k (`ndcg@5`, `recall@5`, ...). */
  metrics: Record<string, number>;
}

/** One row of the matrix: a configuration and its scores. */
export interface ConfigResult {
  config: ConfigSpec;
  status: 'ok' | 'failed';
  /** Failure message when status is `failed` (the sweep goes on; the row is reported as failed). */
  error?: string;
  /** Means over the scored questions, keyed by canonical measure name (`ndcg@5`, `mrr@5`, ...), in [0, 1]. */
  means: Record<string, number>;
  /** 95% confidence interval per canonical measure name: [low, high]. Filled by the statistics stage. */
  ci?: Record<string, [number, number]>;
  /** 1 = not significantly worse than the best on the primary metric; 2 = significantly worse. */
  tier?: 1 | 2;
  /** Number of questions in the means. */
  questions: number;
  /** Seconds spent building this configuration's indexes (shared builds are attributed to every user). */
  buildSeconds: number;
  /** Mean retrieval latency per question in milliseconds. */
  meanQueryMs: number;
  /** Per-question detail, in question order. */
  perQuery: QueryDetail[];
}

/** Scoring level: documents (labels name documents), chunks, or evidence spans. */
export type Level = 'document' | 'chunk' | 'evidence';

/** Everything a finished sweep knows; the report renderers take only this value. */
export interface SweepResult {
  /** Run name (config `name`). */
  name: string;
  /** ISO 8601 time the sweep started. */
  createdAt: string;
  /** Declared primary metric with its k, e.g. `ndcg@10`. */
  primaryMetric: string;
  level: Level;
  /** All rows, in the grid's deterministic order. */
  configs: ConfigResult[];
  /** The questions that were scored (judged questions). */
  questions: Question[];
  /** Questions left out of the means, with the reason (e.g. `no relevant label`). */
  excluded: { id: string; reason: string }[];
  /** The manifest written next to the results (resolved config, fingerprint, versions, ...). */
  manifest: Record<string, unknown>;
  /**
   * Every warning the run emitted (config, dataset, projection, models, failed rows), in the order emitted, as the
   * terminal showed them. The report lists them with the statistics' own warnings. Optional so that results folders
   * written before this field load; a reader treats absent as `manifest.dataset.warnings` (else none).
   */
  warnings?: string[];
  /**
   * At levels `chunk` and `evidence`: the chunk-level judgements each row was scored against, per chunking key, then
   * question id, then chunk id → grade (evidence: the projected grades). Written as `qrels/<chunking>.trec`.
   */
  chunkQrels?: Record<string, Record<string, Record<string, number>>>;
}
