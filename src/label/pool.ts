/**
 * Pooling (issue 20 §2): the unjudged (question, passage) pairs in the top `depth` of chosen rows of a finished
 * sweep, in the order a person should judge them.
 *
 * Two parts: {@link poolPairs} is pure (rows' ranked items and a "judged?" test in, ordered pairs out) and carries
 * the order rule; {@link poolFromResults} reads a results folder, loads the dataset its manifest names, re-chunks
 * what it must for passage ranges, and calls it. The order rule and its justification are in docs/labelling.md.
 *
 * Order rule (queue order, `pair` = 1, 2, ...): for each pair, with r the best rank at which a row retrieved it,
 *   w(row) = 1 / log2(1 + r)   (the DCG discount: how much a grade on this pair moves that row's nDCG/DCG at k ≥ r;
 *                               trec_eval m_ndcg_cut.c, Järvelin & Kekäläinen 2002)
 *   1. tier-1 weight  Σ w over the tier-1 rows that retrieved it, descending (labels there can change the choice);
 *   2. other weight   Σ w over the other chosen rows, descending;
 *   3. best rank over all rows, ascending;
 *   4. question id, then document id, then passage start, ascending (code-unit order): deterministic.
 * Weights are compared after rounding to 12 decimals, so sums taken in a different row order still tie.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { loadSweepResult } from '../run/artifacts.js';
import { loadDataset, corpusFingerprintOf } from '../load/dataset.js';
import { chunkDocumentsParallel } from '../chunk/parallel.js';
import { chunkingKey } from '../chunk/chunker.js';
import { isRelevantOverlap } from '../score/evidence.js';
import type { ChunkingSpec, ConfigResult, Doc, Level, Question, SweepResult } from '../types.js';
import { datasetLabelsFile, judgmentsLogPath, pairKey, readJudgments, resolveLabels, POOL_FORMAT, POOL_VERSION, type PoolHeader, type PoolPair } from './formats.js';

export { datasetLabelsFile };

/** One retrieved item of a row, already resolved to its passage: a document (level document) or a chunk's range. */
export interface PoolItem {
  doc: string;
  /** Chunk id at level chunk. */
  chunk?: string;
  /** Passage range `[start, end)` in the document (UTF-16 code units). */
  start: number;
  end: number;
}

/** A chosen row: its id, whether it is in tier 1, and per question its ranked items (rank = index + 1). */
export interface PoolRow {
  id: string;
  tier1: boolean;
  lists: ReadonlyMap<string, readonly PoolItem[]>;
}

/** A pooled pair before texts are attached: the item, the question, the rows with their best rank, the weights. */
export interface PoolCandidate extends PoolItem {
  qid: string;
  /** Row id → best (smallest) 1-based rank within the depth, in the order rows were given. */
  ranks: Map<string, number>;
  bestRank: number;
  /** Σ 1/log2(1 + rank) over tier-1 rows retrieving the pair. */
  tier1Weight: number;
  /** Σ 1/log2(1 + rank) over the other rows. */
  otherWeight: number;
}

const round12 = (x: number): number => Math.round(x * 1e12) / 1e12;
const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The unjudged pairs in the top `depth` of `rows`, in queue order (module comment). An item repeated within one row's
 * list (several chunks of one document at level document) counts at its first (best) rank. Pure.
 * @param depth ranks pooled per row, integer ≥ 1 (lists shorter than depth give what they have)
 * @param isJudged whether a (question, item) already has a label of any grade (0 included); such pairs are left out
 */
export function poolPairs(rows: readonly PoolRow[], depth: number, isJudged: (qid: string, item: PoolItem) => boolean): PoolCandidate[] {
  const byKey = new Map<string, PoolCandidate>();
  for (const row of rows) {
    for (const [qid, items] of row.lists) {
      const n = Math.min(depth, items.length);
      for (let i = 0; i < n; i++) {
        const it = items[i];
        const key = pairKey({ qid, doc: it.doc, start: it.start, end: it.end });
        let c = byKey.get(key);
        if (c === undefined) {
          if (isJudged(qid, it)) continue;
          c = { qid, doc: it.doc, ...(it.chunk !== undefined ? { chunk: it.chunk } : {}), start: it.start, end: it.end, ranks: new Map(), bestRank: i + 1, tier1Weight: 0, otherWeight: 0 };
          byKey.set(key, c);
        }
        if (c.ranks.has(row.id)) continue; // a later slot of the same item in this row
        c.ranks.set(row.id, i + 1);
        const w = 1 / Math.log2(2 + i);
        if (row.tier1) c.tier1Weight += w;
        else c.otherWeight += w;
        if (i + 1 < c.bestRank) c.bestRank = i + 1;
      }
    }
  }
  return [...byKey.values()].sort(
    (a, b) =>
      round12(b.tier1Weight) - round12(a.tier1Weight) ||
      round12(b.otherWeight) - round12(a.otherWeight) ||
      a.bestRank - b.bestRank ||
      cmpStr(a.qid, b.qid) ||
      cmpStr(a.doc, b.doc) ||
      a.start - b.start,
  );
}

/** The parts of manifest.json the pool reads (all optional: older folders may lack them). */
interface ManifestLike {
  level?: Level;
  relevanceThreshold?: number;
  dataset?: { path?: unknown; split?: unknown };
  config?: { relevanceThreshold?: number; evidenceOverlap?: number; dataset?: { labels?: 'strict' | 'keep' | 'drop'; strictness?: 'strict' | 'warn' } };
}

/** Options of {@link poolFromResults}. */
export interface PoolOptions {
  /** Ranks pooled per row, integer ≥ 1; default 10. */
  depth?: number;
  /** `tier1` (default), `all`, or a list of configuration ids. */
  rows?: 'tier1' | 'all' | string[];
}

/** What {@link poolFromResults} returns: the pool file's header and pairs, and a summary. */
export interface PoolResult {
  header: PoolHeader;
  pairs: PoolPair[];
  summary: {
    pairs: number;
    questions: number;
    /** Question id → pairs pooled, in question order (questions with none left out). */
    perQuestion: Record<string, number>;
    rows: string[];
    depth: number;
    level: 'document' | 'chunk';
    /** Pairs already judged that were left out (in the top depth of the chosen rows). */
    judgedSkipped: number;
    warnings: string[];
  };
}

function resultsError(dir: string, what: string, remedy = 'run the sweep again with this version (`retrieval-sweep run CONFIG --out DIR`) and pool its folder'): HarnessError {
  return new HarnessError('RESULTS_INVALID', `${dir}: ${what}`, { location: { file: dir }, remedy });
}

/** Family of a row: its id without the trailing `.k<k>` (every k of a family is a prefix of one ranking). */
function familyOf(id: string): string {
  return id.replace(/\.k\d+$/, '');
}

/** Ids in matrix.json's `unjudged.overtaking` (empty when absent: an older folder, no bounds, nothing overtakes). */
function overtakingRows(dir: string): Set<string> {
  try {
    const m = JSON.parse(readFileSync(path.join(dir, 'matrix.json'), 'utf8')) as { unjudged?: { overtaking?: unknown } };
    const o = m.unjudged?.overtaking;
    return new Set(Array.isArray(o) ? o.filter((x): x is string => typeof x === 'string') : []);
  } catch {
    return new Set();
  }
}

/**
 * The rows to pool, each mapped to its family's deepest row (whose stored lists are the longest prefix of the same
 * ranking). Named by the id chosen (`tier1`, a list) or by the deepest row's id (`all`).
 */
function chooseRows(result: SweepResult, dir: string, choice: 'tier1' | 'all' | string[], warnings: string[]): { id: string; tier1: boolean; source: ConfigResult }[] {
  const ok = result.configs.filter((c) => c.status === 'ok');
  const deepest = new Map<string, ConfigResult>();
  for (const c of ok) {
    const f = familyOf(c.config.id);
    const d = deepest.get(f);
    if (d === undefined || c.config.k > d.config.k) deepest.set(f, c);
  }
  const tierMarked = result.configs.some((c) => c.tier !== undefined && c.tier !== null);
  const tier1Families = new Set(ok.filter((c) => c.tier === 1).map((c) => familyOf(c.config.id)));
  let chosen: ConfigResult[];
  if (choice === 'tier1') {
    chosen = ok.filter((c) => c.tier === 1);
    // The rows the report says could overtake the recommendation once their unjudged documents are judged
    // (matrix.json `unjudged.overtaking`, issue 20 §1): without their documents the pool cannot settle that question.
    const overtaking = overtakingRows(dir);
    const extra = ok.filter((c) => overtaking.has(c.config.id) && c.tier !== 1);
    if (extra.length > 0) {
      chosen = [...chosen, ...extra];
      warnings.push(
        `${dir}: pooling tier 1 and ${extra.length} other row(s) whose upper bound could overtake the recommendation (matrix.json unjudged.overtaking): ${extra
          .slice(0, 5)
          .map((c) => c.config.id)
          .join(', ')}${extra.length > 5 ? ', …' : ''}; their pairs come after tier 1's in the queue`,
      );
    }
    if (chosen.length === 0) {
      const m = /@(\d+)$/.exec(result.primaryMetric);
      const k = m ? Number(m[1]) : NaN;
      chosen = ok.filter((c) => c.config.k === k);
      warnings.push(
        `${dir}: no row is marked tier 1${tierMarked ? '' : ' (too few questions for the statistics, or a folder without tiers)'}; pooling every row at the primary metric's k (${result.primaryMetric}, ${chosen.length} rows)`,
      );
      for (const c of chosen) tier1Families.add(familyOf(c.config.id));
    }
  } else if (choice === 'all') {
    chosen = [...deepest.values()];
  } else {
    const byId = new Map(result.configs.map((c) => [c.config.id, c] as const));
    const unknown = choice.filter((id) => !byId.has(id));
    if (unknown.length > 0) {
      throw new HarnessError('USAGE', `--rows names ${unknown.length} configuration id(s) not in ${dir}: ${unknown.join(', ')}`, {
        remedy: `use ids from ${path.join(dir, 'matrix.csv')} (e.g. ${ok.slice(0, 2).map((c) => c.config.id).join(', ')}), or --rows tier1 / all`,
      });
    }
    const failed = choice.filter((id) => byId.get(id)!.status !== 'ok');
    if (failed.length > 0) throw new HarnessError('USAGE', `--rows names failed row(s) with no ranking: ${failed.join(', ')}`, { remedy: 'leave failed rows out of --rows' });
    chosen = choice.map((id) => byId.get(id)!);
  }
  const out: { id: string; tier1: boolean; source: ConfigResult }[] = [];
  const seen = new Set<string>();
  for (const c of chosen) {
    const f = familyOf(c.config.id);
    if (seen.has(f)) continue;
    seen.add(f);
    out.push({ id: c.config.id, tier1: tier1Families.has(f), source: deepest.get(f) ?? c });
  }
  return out;
}


/**
 * Pools a finished results folder (the `pool` command). Reads `manifest.json` (dataset path, split, level, relevance
 * threshold, evidence overlap), `configs.json` (rows, chunkings, tiers), `per-query.jsonl` (each row's ranked chunks)
 * and `questions.jsonl`; loads the dataset the manifest names (its current labels: pairs labelled since the sweep are
 * left out) and the judgments log beside the dataset's labels file when there is one (pairs graded there are left
 * out too); re-chunks, for chunk pools, only the documents that appear in the pooled lists (chunking is per document,
 * so their chunks are exactly the sweep's).
 *
 * What counts as judged: level document, the question's `relevant` names the document (any grade); level chunk, its
 * `chunks` names the chunk; level evidence, the chunk is relevant to one of its evidence spans under the sweep's
 * `evidenceOverlap` (docs/evidence.md), or its `chunks` names it, or its `relevant` grades the whole document 0.
 *
 * @throws HarnessError `RESULTS_INVALID` naming what a folder from an older version lacks (manifest `dataset.path`,
 *   rows' `config.chunking`, per-query `retrieved[].chunk`) or what does not match the dataset (a retrieved document
 *   or chunk the dataset does not have); `USAGE` for unknown `rows` ids or a depth that is not an integer ≥ 1; what
 *   `loadSweepResult` and `loadDataset` throw.
 */
export async function poolFromResults(dir: string, options: PoolOptions = {}): Promise<PoolResult> {
  const depth = options.depth ?? 10;
  if (!Number.isSafeInteger(depth) || depth < 1) throw new HarnessError('USAGE', `--depth must be an integer >= 1, got ${String(depth)}`, { remedy: 'pass e.g. --depth 10' });
  const resultsDir = path.resolve(dir);
  const result = loadSweepResult(resultsDir);
  const manifest = result.manifest as ManifestLike;
  const dsPath: unknown = manifest.dataset?.path;
  if (typeof dsPath !== 'string') throw resultsError(resultsDir, 'manifest.json has no dataset.path (a results folder from an older version): the pool needs the dataset to show passages');
  const level: Level = result.level ?? manifest.level;
  if (level !== 'document' && level !== 'chunk' && level !== 'evidence') throw resultsError(resultsDir, `configs.json and manifest.json name no level (got ${JSON.stringify(level)})`);
  for (const c of result.configs) {
    const ch = (c.config as Partial<ConfigResult['config']>).chunking;
    if (!ch || !('size' in ch)) throw resultsError(resultsDir, `configs.json row ${c.config.id ?? '?'} has no config.chunking (a results folder from an older version)`);
  }
  const cfg = manifest.config ?? {};
  const threshold: number = manifest.relevanceThreshold ?? cfg.relevanceThreshold ?? 1;
  const minOverlap: number = cfg.evidenceOverlap ?? 0.5;
  const split: string | undefined = typeof manifest.dataset?.split === 'string' ? manifest.dataset.split : undefined;

  const dataset = await loadDataset({
    path: dsPath,
    ...(split !== undefined ? { split } : {}),
    labels: cfg.dataset?.labels ?? 'strict',
    strictness: cfg.dataset?.strictness ?? 'strict',
  });
  const docs = new Map<string, Doc>(dataset.docs.map((d) => [d.id, d]));
  const current = new Map<string, Question>(dataset.questions.map((q) => [q.id, q]));
  const warnings: string[] = [...dataset.warnings];

  const rows = chooseRows(result, resultsDir, options.rows ?? 'tier1', warnings);
  const poolLevel: 'document' | 'chunk' = level === 'document' ? 'document' : 'chunk';

  // Chunk ranges of the chunkings the chosen rows use, for the documents their lists name.
  const ranges = new Map<string, Map<string, { start: number; end: number }>>();
  if (poolLevel === 'chunk') {
    const needed = new Map<string, { spec: ChunkingSpec; docs: Set<string> }>();
    for (const r of rows) {
      const spec = r.source.config.chunking;
      const key = chunkingKey(spec);
      let n = needed.get(key);
      if (!n) needed.set(key, (n = { spec, docs: new Set() }));
      for (const q of r.source.perQuery) for (const h of q.retrieved.slice(0, depth)) n.docs.add(h.docId);
    }
    for (const [key, n] of needed) {
      const list = [...n.docs].sort(cmpStr).map((id) => {
        const d = docs.get(id);
        if (!d) throw resultsError(resultsDir, `a row retrieved document ${JSON.stringify(id)}, which the dataset at ${dataset.root} does not have: the results were made from another corpus`, 'pool the results of a sweep over this dataset');
        return d;
      });
      const m = new Map<string, { start: number; end: number }>();
      for (const c of await chunkDocumentsParallel(list, n.spec)) m.set(c.id, { start: c.start, end: c.end });
      ranges.set(key, m);
    }
  }

  const poolRows: PoolRow[] = rows.map((r) => {
    const lists = new Map<string, PoolItem[]>();
    const key = chunkingKey(r.source.config.chunking);
    for (const q of r.source.perQuery) {
      const items: PoolItem[] = [];
      for (const h of q.retrieved.slice(0, depth)) {
        if (typeof h.chunkId !== 'string' || typeof h.docId !== 'string') throw resultsError(resultsDir, `per-query.jsonl lines of ${r.source.config.id} lack retrieved[].chunk or .doc (a results folder from an older version)`);
        const d = docs.get(h.docId);
        if (!d) throw resultsError(resultsDir, `${r.source.config.id} retrieved document ${JSON.stringify(h.docId)} for ${q.qid}, which the dataset at ${dataset.root} does not have: the results were made from another corpus`, 'pool the results of a sweep over this dataset');
        if (poolLevel === 'document') items.push({ doc: h.docId, start: 0, end: d.text.length });
        else {
          const rg = ranges.get(key)!.get(h.chunkId);
          if (!rg) throw resultsError(resultsDir, `${r.source.config.id} retrieved chunk ${JSON.stringify(h.chunkId)}, which chunking ${key} of the dataset at ${dataset.root} does not give: the documents changed since the sweep`, 'run the sweep again, then pool');
          items.push({ doc: h.docId, chunk: h.chunkId, start: rg.start, end: rg.end });
        }
      }
      lists.set(q.qid, items);
    }
    return { id: r.id, tier1: r.tier1, lists };
  });
  for (const r of rows) {
    if (r.source.config.k < depth) warnings.push(`${r.id}: the results hold its top ${r.source.config.k} only (largest k of its family); pooled to rank ${r.source.config.k}, not ${depth}`);
  }

  // Pairs graded in the judgments log beside the dataset's labels file (merged or not) are judged too.
  const logFile = judgmentsLogPath(datasetLabelsFile(dataset.root, dataset.layout, dataset.split));
  const logged = new Set<string>();
  if (existsSync(logFile)) for (const l of resolveLabels(readJudgments(logFile).judgments)) logged.add(pairKey(l));

  const stored = new Map(result.questions.map((q) => [q.id, q]));
  let judgedSkipped = 0;
  const seenJudged = new Set<string>();
  const isJudged = (qid: string, it: PoolItem): boolean => {
    const q = current.get(qid) ?? stored.get(qid);
    let judged = logged.has(pairKey({ qid, ...it }));
    if (!judged && q) {
      if (level === 'document') judged = Object.prototype.hasOwnProperty.call(q.relevant, it.doc);
      else {
        judged = it.chunk !== undefined && q.chunkLabels !== undefined && Object.prototype.hasOwnProperty.call(q.chunkLabels, it.chunk);
        if (!judged && level === 'evidence') {
          judged =
            q.relevant[it.doc] === 0 ||
            (q.evidence ?? []).some((s) => s.doc === it.doc && isRelevantOverlap(it.start, it.end, s.start, s.end, minOverlap));
        }
      }
    }
    if (judged) {
      const k = pairKey({ qid, ...it });
      if (!seenJudged.has(k)) judgedSkipped++;
      seenJudged.add(k);
    }
    return judged;
  };
  const candidates = poolPairs(poolRows, depth, isJudged);

  const pairs: PoolPair[] = candidates.map((c, i) => {
    const d = docs.get(c.doc)!;
    const q = current.get(c.qid) ?? stored.get(c.qid);
    return {
      pair: i + 1,
      qid: c.qid,
      question: q?.text ?? '',
      doc: c.doc,
      ...(c.chunk !== undefined ? { chunk: c.chunk } : {}),
      start: c.start,
      end: c.end,
      passage: d.text.slice(c.start, c.end),
      rows: [...c.ranks.keys()],
      bestRank: c.bestRank,
      docChars: d.text.length,
    };
  });
  const header: PoolHeader = {
    format: POOL_FORMAT,
    version: POOL_VERSION,
    dataset: { name: dataset.name, root: dataset.root, corpus: corpusFingerprintOf(dataset) },
    results: resultsDir,
    level: poolLevel,
    depth,
    rows: rows.map((r) => r.id),
    pairs: pairs.length,
    threshold,
    sweepLevel: level,
  };
  const counts = new Map<string, number>();
  for (const p of pairs) counts.set(p.qid, (counts.get(p.qid) ?? 0) + 1);
  const perQuestion: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const q of result.questions) if (counts.has(q.id)) perQuestion[q.id] = counts.get(q.id)!;
  return {
    header,
    pairs,
    summary: { pairs: pairs.length, questions: Object.keys(perQuestion).length, perQuestion, rows: header.rows, depth, level: poolLevel, judgedSkipped, warnings },
  };
}
