/**
 * The sweep as data: a graph of keyed units (issue 23). `planGraph(config, dataset, env)` works out, without running
 * anything, every unit of work a sweep of `config` over `dataset` does, what each needs (other units, by id) and the
 * checkpoint key it is stored under (the keys `runSweep` uses, src/run/checkpoint.ts, so existing caches stay valid),
 * and, for each row of the matrix, the units it depends on. The matrix's row list is `plan.rows`.
 *
 * Pure: no disk, no clock, no models. What only a run can know (an embedding model's cache key, a retriever module's
 * file hash, the hash of a reranker's base lists) is named in the unit's `deferred` list, and its `key` is then null;
 * the run computes that key from `keyParts` plus those values. Units are plain data (parameters and input ids, no
 * closures), so they serialise with `JSON.stringify` and could be handed to another process.
 *
 * Unit kinds (their ids):
 * - `chunking` (`chunking:<ck>`): one chunking of the corpus;
 * - `keyword` (`<ck>.keyword`, `<ck>.keyword-lance-fts`): index + ranking of one keyword engine on one chunking;
 * - `embedding` (`embedding:<label>`): one model's vectors of the distinct chunk texts of its chunkings and the questions;
 * - `dense` (`<ck>.semantic.<label>`, `<ck>.<lancedb engine>.<label>`): a vector index + ranking;
 * - `fusion` (`<ck>.hybrid[-<fusion key>].<label>`): keyword and dense lists fused;
 * - `external` (`<ck>.<name>`): a `retrievers:` module (or an object passed in code);
 * - `run` (`none.<name>`): an imported TREC run;
 * - `rerank` (`<ranking id>.rr-<label>-d<depth>`): a ranking's top `depth` rescored;
 * - `scoring` (`scoring`): every row scored from the rankings.
 */
import type { SweepConfig } from '../config/schema.js';
import { semanticRetrieverName } from '../config/schema.js';
import { chunkingKeyOf, expandGrid, neededChunkings, rankingId } from '../config/expand.js';
import type { ConfigSpec, Dataset, Question } from '../types.js';
import { KEYWORD_ANALYSER } from '../retrieve/tokenize.js';
import { CheckpointStore, chunkingCheckpointKey, rankingInputsKey } from '../run/checkpoint.js';
import { corpusFingerprintOf } from '../load/fingerprint.js';
import { maxOf } from '../bounded.js';
import { HarnessError } from '../errors.js';

/** The kinds of unit a plan holds (see the module comment). */
export type UnitKind = 'chunking' | 'keyword' | 'embedding' | 'dense' | 'fusion' | 'external' | 'run' | 'rerank' | 'scoring';

/** One unit of work: plain data, serialisable. */
export interface PlanUnit {
  /** Unique in the plan; for ranking units the ranking id the rows cut (`none.keyword`, `cs256-ov32.semantic.glove-100d`). */
  id: string;
  kind: UnitKind;
  /** What the unit computes from (model label, engine, fusion, depth, ...). */
  params: Record<string, unknown>;
  /** Ids of the units whose outputs this one reads, in plan order. */
  inputs: string[];
  /**
   * What the checkpoint key is a hash of (`CheckpointStore.key(keyParts)`), including the dataset part; null for a
   * unit that is never checkpointed (embedding: its texts are cached one by one in embeddings.sqlite; imported runs;
   * scoring; an object retriever without a checkpointKey).
   */
  keyParts: Record<string, unknown> | null;
  /** Fields of `keyParts` that only the run knows (their value here is the string `<at run>`). */
  deferred: string[];
  /** The checkpoint key (64 hex) when every part is known; null when deferred or not checkpointed. */
  key: string | null;
  /** Depth (hits per question) the unit's lists are computed and stored at; null for units without lists. */
  depth: number | null;
}

/** One row of the matrix and the units it needs (its ranking unit and everything upstream, plus scoring). */
export interface PlanRow {
  spec: ConfigSpec;
  /** The unit whose lists the row cuts at k. */
  ranking: string;
  /** Every unit the row depends on (transitively), in plan order. */
  needs: string[];
}

/** Package versions and names the keys hold, read by the caller (the plan itself reads nothing). */
export interface PlanEnv {
  /** The default tokenizer's name (chunking keys). */
  tokenizer: string;
  /** wink-bm25-text-search's version (BM25 keys). */
  bm25Engine: string;
  /** @lancedb/lancedb's version (LanceDB keys). */
  lancedb: string;
  /** Retrievers passed as objects: name → their checkpointKey (undefined: never checkpointed). */
  objectRetrievers?: Map<string, string | undefined>;
}

/** The plan of one sweep. */
export interface Plan {
  /** Units in dependency order (every unit after its inputs). */
  units: PlanUnit[];
  /** Rows of the matrix in grid order. */
  rows: PlanRow[];
  /** SHA-256 of the corpus (`fingerprintCorpus`; the loader's `Dataset.corpusFingerprint` when set), part of every ranking key. */
  corpusFingerprint: string;
  /** The key parts every ranking unit shares (dataset, question ids, level). */
  common: Record<string, unknown>;
  /** Depth of the keyword and dense lists (max of k, rerank depth and, with hybrid rows, the fusion depth). */
  baseDepth: number;
  /** Depth of external and LanceDB-FTS lists (max of k and rerank depth). */
  rowDepth: number;
}

const AT_RUN = '<at run>';

/**
 * Works out the plan of a sweep of `config` over `dataset`'s `scored` questions (see the module comment). `config` is
 * the sweep's resolved config (object retrievers and providers already joined). Pure and deterministic: the same
 * arguments give the same plan.
 */
export function planGraph(config: SweepConfig, dataset: Pick<Dataset, 'docs' | 'corpusFingerprint'>, scored: readonly Question[], env: PlanEnv): Plan {
  const grid = expandGrid(config);
  const maxK = maxOf(config.topK);
  const gridModes = new Set(grid.map((r) => r.mode));
  const rowDepth = Math.max(maxK, maxOf(grid.map((r) => r.rerank?.depth ?? 0), 0));
  const baseDepth = gridModes.has('hybrid') ? Math.max(rowDepth, config.hybrid.depth) : rowDepth;
  const corpusFingerprint = corpusFingerprintOf(dataset); // computed while loading: no pass over the texts here
  const common = { dataset: rankingInputsKey(corpusFingerprint, scored), questions: scored.map((q) => q.id), level: config.level };

  const units = new Map<string, PlanUnit>();
  const add = (u: Omit<PlanUnit, 'key'>): PlanUnit => {
    const unit: PlanUnit = { ...u, key: u.keyParts && u.deferred.length === 0 ? CheckpointStore.key(u.keyParts) : null };
    units.set(unit.id, unit);
    return unit;
  };
  const ranking = (parts: Record<string, unknown>) => ({ ...common, ...parts });

  // Chunkings the grid or a retriever needs.
  for (const spec of neededChunkings(config)) {
    const ck = chunkingKeyOf(spec);
    const key = chunkingCheckpointKey(corpusFingerprint, dataset.docs, spec, env.tokenizer);
    units.set(`chunking:${ck}`, { id: `chunking:${ck}`, kind: 'chunking', params: { size: spec.size, overlap: spec.overlap }, inputs: [], keyParts: { kind: 'chunking', size: spec.size, overlap: spec.overlap, tokenizer: env.tokenizer }, deferred: [], key, depth: null });
  }

  // Keyword: BM25 per chunking with bm25 rows or hybrid rows; LanceDB FTS per chunking with its rows.
  const keywordParts = new Map<string, Record<string, unknown>>();
  for (const ck of new Set(grid.filter((r) => (r.mode === 'keyword' && r.retriever === 'keyword') || r.mode === 'hybrid').map((r) => r.chunkingKey))) {
    const parts = { kind: 'keyword', chunking: ck, k1: config.bm25.k1, b: config.bm25.b, analyser: KEYWORD_ANALYSER, engine: env.bm25Engine };
    keywordParts.set(ck, parts);
    add({ id: `${ck}.keyword`, kind: 'keyword', params: { engine: 'bm25', k1: config.bm25.k1, b: config.bm25.b }, inputs: [`chunking:${ck}`], keyParts: ranking(parts), deferred: [], depth: baseDepth });
  }
  for (const ck of new Set(grid.filter((r) => r.mode === 'keyword' && r.retriever === 'keyword-lance-fts').map((r) => r.chunkingKey)))
    add({ id: `${ck}.keyword-lance-fts`, kind: 'keyword', params: { engine: 'lancedb-fts' }, inputs: [`chunking:${ck}`], keyParts: ranking({ kind: 'keyword', engine: 'lancedb-fts', chunking: ck, lancedb: env.lancedb }), deferred: [], depth: rowDepth });

  // Dense: per model, its embedding, then per chunking the memory unit and the LanceDB units, then fusion.
  const needsDense = gridModes.has('semantic') || gridModes.has('hybrid');
  const engines = (config.semantic ?? [{ engine: 'memory' as const }]).map((engine) => ({ engine, name: semanticRetrieverName(engine) }));
  const modelDeferred = ['documentKey', 'queryKey'];
  for (const spec of needsDense ? config.embeddings : []) {
    const rows = grid.filter((r) => r.embedding === spec.label && (r.mode === 'semantic' || r.mode === 'hybrid'));
    if (rows.length === 0) continue;
    const chunkKeys = [...new Set(rows.map((r) => r.chunkingKey))];
    const embId = `embedding:${spec.label}`;
    add({ id: embId, kind: 'embedding', params: { model: spec.model, label: spec.label }, inputs: chunkKeys.map((ck) => `chunking:${ck}`), keyParts: null, deferred: [], depth: null });
    const semanticRows = rows.filter((r) => r.mode === 'semantic');
    for (const ck of chunkKeys) {
      const inGrid = (name: string) => semanticRows.some((r) => r.chunkingKey === ck && r.retriever === name);
      const lanceHere = engines.filter((x) => x.engine.engine === 'lancedb' && inGrid(x.name));
      const hybridHere = rows.some((r) => r.mode === 'hybrid' && r.chunkingKey === ck);
      const flatHere = lanceHere.find((x) => x.engine.engine === 'lancedb' && x.engine.index.type === 'flat');
      const ivfHere = lanceHere.some((x) => x.engine.engine === 'lancedb' && x.engine.index.type === 'ivf_pq');
      const semParts = { kind: 'semantic', chunking: ck, model: spec.model, documentKey: AT_RUN, queryKey: AT_RUN };
      const semId = `${ck}.semantic.${spec.label}`;
      // The model first: a row fails with the model's error when both it and the chunking fail (as before the executor).
      const inputs = [embId, `chunking:${ck}`];
      if (inGrid('semantic') || hybridHere || (ivfHere && !flatHere))
        add({ id: semId, kind: 'dense', params: { engine: 'memory', model: spec.label }, inputs, keyParts: ranking(semParts), deferred: modelDeferred, depth: baseDepth });
      const ordered = [...lanceHere].sort((a, b) => Number(a === flatHere ? 0 : 1) - Number(b === flatHere ? 0 : 1));
      for (const { engine, name } of ordered) {
        if (engine.engine !== 'lancedb') continue;
        // An ivf_pq unit's ann_recall is measured against the exact lists (memory, else flat).
        const exact = engine.index.type === 'ivf_pq' ? (units.has(semId) ? [semId] : flatHere ? [`${ck}.${flatHere.name}.${spec.label}`] : []) : [];
        add({ id: `${ck}.${name}.${spec.label}`, kind: 'dense', params: { engine: 'lancedb', index: engine.index, model: spec.label }, inputs: [...inputs, ...exact], keyParts: ranking({ ...semParts, engine: 'lancedb', index: engine.index, lancedb: env.lancedb }), deferred: modelDeferred, depth: baseDepth });
      }
      for (const row of rows) {
        if (row.mode !== 'hybrid' || row.chunkingKey !== ck) continue;
        const id = rankingId({ ...row, rerank: null });
        if (units.has(id)) continue;
        const fusion = row.fusion!;
        add({ id, kind: 'fusion', params: { fusion, depth: config.hybrid.depth }, inputs: [semId, `${ck}.keyword`, `chunking:${ck}`], keyParts: ranking({ kind: 'hybrid', keyword: keywordParts.get(ck) ?? null, semantic: semParts, fusion, depth: config.hybrid.depth }), deferred: modelDeferred.map((f) => `semantic.${f}`), depth: baseDepth });
      }
    }
  }

  // External retrievers, then imported runs.
  for (const entry of config.retrievers) {
    const ck = chunkingKeyOf(entry.chunking);
    const object = env.objectRetrievers?.has(entry.name) ?? false;
    const objectKey = env.objectRetrievers?.get(entry.name);
    const keyParts = object
      ? objectKey !== undefined
        ? ranking({ kind: 'external-object', name: entry.name, chunking: ck, key: objectKey })
        : null
      : ranking({ kind: 'external', name: entry.name, chunking: ck, module: AT_RUN, options: entry.options });
    add({ id: `${ck}.${entry.name}`, kind: 'external', params: { name: entry.name, module: entry.module, options: entry.options }, inputs: [`chunking:${ck}`], keyParts, deferred: object ? [] : ['module'], depth: rowDepth });
  }
  for (const run of config.runs) add({ id: `none.${run.name}`, kind: 'run', params: { name: run.name, path: run.path }, inputs: ['chunking:none'], keyParts: null, deferred: [], depth: null });

  // Rerank units: one per reranked ranking id.
  for (const row of grid) {
    if (row.rerank === null) continue;
    const id = rankingId(row);
    if (units.has(id)) continue;
    const base = rankingId({ ...row, rerank: null });
    add({ id, kind: 'rerank', params: { label: row.rerank.label, model: row.rerank.model, depth: row.rerank.depth }, inputs: [`chunking:${row.chunkingKey}`, base], keyParts: ranking({ kind: 'rerank', chunking: row.chunkingKey, base: AT_RUN, reranker: AT_RUN, depth: row.rerank.depth }), deferred: ['base', 'reranker'], depth: null });
  }

  // Rows: each row's ranking unit and everything upstream of it, then scoring (one unit reading every ranking).
  const closure = (id: string, into: Set<string>) => {
    if (into.has(id)) return;
    const u = units.get(id);
    if (!u) return;
    for (const i of u.inputs) closure(i, into);
    into.add(id);
  };
  const order = [...units.keys()];
  const rows: PlanRow[] = grid.map((spec) => {
    const needs = new Set<string>();
    closure(rankingId(spec), needs);
    return { spec, ranking: rankingId(spec), needs: order.filter((id) => needs.has(id)).concat('scoring') };
  });
  const rankingsRead = [...new Set(rows.map((r) => r.ranking))].filter((id) => units.has(id));
  add({ id: 'scoring', kind: 'scoring', params: { level: config.level, rows: grid.length }, inputs: rankingsRead, keyParts: null, deferred: [], depth: null });
  return { units: [...units.values()], rows, corpusFingerprint, common, baseDepth, rowDepth };
}

/** Units that the rows matching `keep` need (every unit for `() => true`), in plan order. */
export function unitsFor(plan: Plan, keep: (row: PlanRow) => boolean): PlanUnit[] {
  const needed = new Set(plan.rows.filter(keep).flatMap((r) => r.needs));
  return plan.units.filter((u) => needed.has(u.id));
}

/**
 * The rows `run --only GLOB` keeps: those whose id matches `glob` (`*` any run of characters, `?` one character, the
 * rest literal; e.g. `*.keyword.*`, `cs256-*`) or whose ranking unit's kind equals `glob` (`keyword`, `dense`,
 * `fusion`, `external`, `run`, `rerank`). In plan order.
 * @throws HarnessError('USAGE') when no row matches, listing a few row ids and the kinds.
 */
export function selectRows(plan: Plan, glob: string): PlanRow[] {
  const re = new RegExp(`^${glob.split('').map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&'))).join('')}$`);
  const kindOf = new Map(plan.units.map((u) => [u.id, u.kind]));
  const rows = plan.rows.filter((r) => re.test(r.spec.id) || kindOf.get(r.ranking) === glob);
  if (rows.length === 0)
    throw new HarnessError('USAGE', `--only ${glob} matches no row of the plan (${plan.rows.length} rows, e.g. ${plan.rows.slice(0, 3).map((r) => r.spec.id).join(', ')})`, {
      remedy: `give a glob over row ids ('*.keyword.*', 'cs256-*.k5') or a unit kind (${[...new Set(plan.rows.map((r) => kindOf.get(r.ranking)))].join(', ')})`,
    });
  return rows;
}

/**
 * The checkpoint key of `unit` once the run knows its deferred parts: `unit.key` when the plan knew it, null for a unit
 * never checkpointed, else `CheckpointStore.key` of its `keyParts` with each deferred part (a dotted path such as
 * `semantic.documentKey`) replaced by `values[path]`. The same key the sweep used before the plan (a test pins them).
 * @throws Error when a deferred part has no value (a bug of the caller).
 */
export function resolveKey(unit: PlanUnit, values: Record<string, unknown>): string | null {
  if (unit.key !== null || unit.keyParts === null) return unit.key;
  const parts = structuredClone(unit.keyParts);
  for (const at of unit.deferred) {
    if (!(at in values)) throw new Error(`resolveKey: no value for the deferred part ${at} of unit ${unit.id}`);
    const path = at.split('.');
    let o = parts as Record<string, unknown>;
    for (const p of path.slice(0, -1)) o = o[p] as Record<string, unknown>;
    o[path[path.length - 1]] = values[at];
  }
  return CheckpointStore.key(parts);
}
