/**
 * retrieval-sweep's public API (re-exports only). The data flows load → chunk → embed → retrieve → score → report;
 * `runSweep` runs the whole grid, `writeArtifacts` writes a results folder, `evaluate` scores any TREC run.
 */
export type {
  Doc,
  Question,
  EvidenceSpan,
  Dataset,
  ChunkingSpec,
  Chunk,
  Hit,
  Mode,
  Level,
  ConfigSpec,
  QueryDetail,
  ConfigResult,
  SweepResult,
} from './types.js';
export { HarnessError, isHarnessError, type ErrorCode, type ErrorLocation } from './errors.js';

// config
export { parseConfig, loadConfigFile, configSchema, type SweepConfig } from './config/schema.js';
export { resolveCacheDir, CACHE_ENV } from './config/cache-dir.js';
export { expandGrid, expandChunkings, configId, chunkingKeyOf } from './config/expand.js';

// load
export { loadDataset, type DatasetSpec } from './load/dataset.js';
export { loadDocumentFolder } from './load/documents.js';
export { parseQuestions } from './load/questions.js';
export { loadBeir } from './load/beir.js';
export { sampleDataset, judgedDocumentIds, type SampleSpec, type SampleRecord } from './load/sample.js';
export { decodeDocumentBytes, type DecodedText } from './load/text.js';
export { parseQrels, parseRun, readQrels, readRun, formatQrels, formatRun } from './load/trec.js';

// chunk
export { chunkDocuments, defaultTokenizer, type ChunkOptions, type Tokenizer } from './chunk/chunker.js';
export { chunkDocumentsParallel, createChunkPool, type ChunkPool, type ParallelChunkOptions } from './chunk/parallel.js';

// embed
export { createProvider, type ProviderContext } from './embed/registry.js';
export type { EmbeddingProvider, EmbedRole } from './embed/provider.js';
export { resolveEmbeddingSpec, embeddingSpecSchema, type EmbeddingSpec } from './embed/spec.js';
export { EmbeddingCache, embeddingSpecKey, type ThroughputRecord } from './embed/cache.js';
export { embedTexts, embedTextsToMatrix, embedTextsToMatrices, textSourceOf, type EmbedStats, type TextSource } from './embed/embed-texts.js';

// retrieve
export { compareByRule, rankByRule, TIE_RULE } from './retrieve/rank.js';
export { buildKeywordIndex, buildKeywordIndexParallel, type KeywordBuildOptions, type KeywordIndex, type Bm25Params } from './retrieve/bm25.js';
export { keywordTokens } from './retrieve/tokenize.js';
export {
  reciprocalRankFusion,
  weightedRrf,
  convexFusion,
  normalizeScores,
  fuse,
  fuseTwo,
  fusionKey,
  type RrfOptions,
  type ConvexOptions,
  type WeightedRrfOptions,
  type Normalization,
  type FusionSetting,
  type RunMap,
} from './retrieve/fusion.js';
export type { Retriever, RetrieverFactory, RetrieverContext, RetrieverQuestion, RetrievedHit } from './retrieve/retriever.js';
export { keywordRetriever, semanticRetriever, hybridRetriever, listRetriever, type Embedder } from './retrieve/builtin.js';
export { OpenAIProvider } from './embed/openai.js';
export { HttpClient } from './net/http.js';
export { createHttpReranker } from './rerank/http.js';
export type { Reranker, RerankSpec } from './rerank/types.js';
export { createReranker, type RerankerContext } from './rerank/registry.js';
export { rerankEntrySchema, resolveRerankSpec, resolveRerankList } from './rerank/spec.js';
export { rerankLists, measureRerankLatency, type RerankQuestion, type RerankListsOptions } from './rerank/apply.js';
export { RerankCache, MemoryPairScores, type PairScoreStore } from './rerank/cache.js';
export {
  lancedbRetriever,
  lancedbKeywordRetriever,
  annRecall,
  lancedbTableKey,
  defaultSubVectors,
  type LancedbRetrieverOptions,
  type LancedbIndexSetting,
  type LancedbFtsSetting,
  type LancedbDescription,
} from './retrieve/lancedb.js';
export { fromLlamaIndexRetriever, ProviderEmbedding, type LlamaIndexAdapterOptions } from './retrieve/llamaindex.js';
export {
  buildVectorIndex,
  buildVectorIndexFromMatrix,
  buildVectorIndexFromFile,
  createVectorMatrix,
  createVectorFile,
  VectorMatrix,
  VectorFile,
  type VectorIndex,
  type SearchBatchOptions,
  type FileIndexOptions,
} from './retrieve/semantic.js';
export { memoryShares, parseByteSize, DEFAULT_MEMORY_BYTES, type MemoryShares } from './config/memory.js';

// score
export {
  parseMeasure,
  formatMeasure,
  canonicalMeasureName,
  measuresAtK,
  MEASURE_FAMILIES,
  ALL_MEASURE_FAMILIES,
  MEASURE_ALIASES,
  condensedMeasure,
  type Measure,
  type MeasureFamily,
} from './score/measures.js';
export {
  scoreRanking,
  evaluate,
  normaliseQrels,
  normaliseRun,
  relevantCount,
  type Qrels,
  type Run,
  type QrelsInput,
  type RunInput,
  type EvaluationResult,
  type ScoreOptions,
} from './score/evaluate.js';
export { MAX_GRADE, MIN_TREC_GRADE } from './score/grades.js';
export { unjudgedBounds, type UnjudgedBounds } from './score/bounds.js';
export { jsonSchemas } from './config/json-schema.js';
export { questionLineSchema } from './load/question-schema.js';
export { bootstrapCI, pairedPermutationTest, holm, minimumDetectableDifference, seededRandom } from './score/stats.js';
export {
  sequentialSignFlipHolm,
  sequentialBootstrapDiff,
  wilsonInterval,
  type SequentialTest,
  type SequentialInterval,
} from './score/sequential.js';
export { crossValidatedSelection, assignFolds, type SelectionResult, type SelectionOptions } from './score/selection.js';
export { projectEvidence, projectionStats, scoreChunkLevel, type Projection } from './score/evidence.js';
export { evidenceCoverage, atTokenBudget, type BudgetMeasures } from './score/budget.js';

// report
export { analyze, withStatistics, type Analysis, type AnalyzeOptions } from './report/analyze.js';
export { renderReports, type RenderedReports } from './report/render.js';
export {
  compareSweeps,
  compareRuns,
  formatComparisonText,
  formatComparisonMarkdown,
  recommendedRow,
  type CompareOptions,
  type SweepComparison,
  type RunsComparison,
} from './report/compare.js';

// run
export { runSweep, type SweepEvent, type SweepOptions, type RetrieverEntry } from './run/sweep.js';
// the plan and its executor (issue 23; docs/plan.md)
export { planGraph, selectRows, unitsFor, resolveKey, type Plan, type PlanUnit, type PlanRow, type UnitKind } from './plan/graph.js';
export { executePlan, type ExecuteOptions, type Execution } from './run/execute.js';
export { UNIT_KINDS } from './run/units/index.js';
export { UnitFailure, type UnitKindHandler, type UnitContext, type UnitResult, type UnitOutput } from './run/units/types.js';
export { prepareSweep, type Front, type FrontOptions } from './run/front.js';
export { collectLists, type CollectOptions } from './run/retrieve.js';
export { CheckpointStore, CHECKPOINT_FORMAT } from './run/checkpoint.js';
export { writeArtifacts, loadSweepResult } from './run/artifacts.js';
export { planSweep, formatPlan, type SweepPlan, type PlannedModel, type PlannedChunking } from './run/plan.js';
export { recheckResults, formatRecheck, type RecheckResult } from './run/recheck.js';
