/**
 * Scoring: the one place for the edge-case policy. Pure: no disk, no clock, inputs never changed.
 *
 * Policy (trec_eval 10.0 semantics unless said otherwise; each rule has a named test in test/score/):
 * - Relevance threshold t (default 1, integer ≥ 1): a judged document with grade ≥ t is relevant for the binary
 *   measures (hit_rate, recall, precision, mrr, map, r_precision). Grade 0 (or negative) = judged not relevant; an
 *   unjudged document is not relevant. ndcg and ndcg_exp use every grade > 0 as gain, whatever t (trec_eval's
 *   `ndcg_cut` ignores `-l` too).
 * - R = number of judged documents with grade ≥ t.
 * - A document id that appears again later in a ranking is credited once, at its first slot; later slots holding it
 *   count as non-relevant with gain 0 but still occupy their rank (this is how chunk rankings are scored at
 *   document level: each chunk maps to its document id).
 * - A question with R = 0 is excluded: listed in `excluded`, left out of `perQuery` and of the means (trec_eval
 *   would average it as 0).
 * - A question in the qrels but missing from the run scores 0 on every measure and stays in the means (`trec_eval
 *   -c`). An empty ranking likewise scores 0.
 * - A question in the run but not in the qrels is ignored and listed in `ignored`.
 * - A run's lines are ordered by score descending, then docno descending (`rankByRule`, src/retrieve/rank.ts); the
 *   rank column is ignored. A docno repeated within a question keeps its first slot in that order; later copies
 *   are non-relevant slots, and a warning names them (trec_eval refuses such runs).
 * - Means are arithmetic means over the scored questions (macro average), summed in qrels order.
 * - Judged: a slot holding a document with a judgement of any grade (0 and negative included), at that document's
 *   first slot (a repeat is a non-relevant slot whatever the labels, and exported runs name it `doc#n`, unjudged).
 *   `judged@k` counts the judged slots of the top k (a short ranking's missing tail is not judged); `bpref` skips
 *   every other slot; `*_condensed` measures are computed on the judged slots alone, ranks closed up (trec_eval
 *   `-J`).
 */
import { HarnessError } from '../errors.js';
import { rankByRule } from '../retrieve/rank.js';
import { isValidGrade, MAX_GRADE, MIN_TREC_GRADE } from './grades.js';
import { formatMeasure, isValidCutoff, type Measure } from './measures.js';
import { hitRateAt } from './metrics/hit-rate.js';
import { averagePrecisionAt, precisionAtRelevantSlot } from './metrics/map.js';
import { bpref } from './metrics/bpref.js';
import { condenseRanking } from './metrics/condensed.js';
import { judgedAt } from './metrics/judged.js';
import { reciprocalRank, reciprocalRankAt } from './metrics/mrr.js';
import { exponentialGain } from './metrics/ndcg-exp.js';
import { discountDenominator, idealDcgAt, idealDcgCurve, linearGain, ndcgAt } from './metrics/ndcg.js';
import { precisionAt } from './metrics/precision.js';
import { rPrecision } from './metrics/r-precision.js';
import { recallAt } from './metrics/recall.js';

/** Scoring options. */
export interface ScoreOptions {
  /** Minimum grade that counts as relevant for the binary measures; integer ≥ 1, default 1 (trec_eval `-l`). */
  relevanceThreshold?: number;
}

/** One ranking's scores. */
export interface RankingScore {
  /** Measure values keyed by canonical name (`ndcg@10`, `r_precision`), in the order the measures were given; each in [0, 1]. */
  values: Record<string, number>;
  /**
   * 1-based rank of the first slot credited as relevant (grade ≥ threshold, first occurrence), within the largest k
   * asked (within R when only `r_precision` is asked, within the whole ranking when only uncut `map` or `map` and
   * `r_precision` are); null when there is none.
   */
  firstRelevantRank: number | null;
  /** R: judged documents with grade ≥ threshold. When 0 the question is not scorable and every value is 0. */
  relevant: number;
}

/** Default relevance threshold. */
export const DEFAULT_RELEVANCE_THRESHOLD = 1;

/**
 * The threshold from `options`, checked.
 * @throws HarnessError `USAGE` when it is not an integer ≥ 1.
 */
export function resolveThreshold(options?: ScoreOptions): number {
  const t = options?.relevanceThreshold ?? DEFAULT_RELEVANCE_THRESHOLD;
  if (!Number.isSafeInteger(t) || t < 1) {
    throw new HarnessError('USAGE', `relevance threshold must be an integer >= 1, got ${String(t)}`, {
      remedy: 'use 1 (grade >= 1 is relevant, the trec_eval default) or a higher grade such as 2',
    });
  }
  return t;
}

/**
 * R: the number of judged documents with grade ≥ `threshold` (default 1). Non-numeric grades are ignored.
 * @throws HarnessError `USAGE` when the threshold is not an integer ≥ 1.
 */
export function relevantCount(judgements: Readonly<Record<string, number>>, threshold?: number): number {
  const t = resolveThreshold({ relevanceThreshold: threshold });
  let r = 0;
  for (const id in judgements) {
    if (!Object.prototype.hasOwnProperty.call(judgements, id)) continue;
    const g = judgements[id];
    if (typeof g === 'number' && g >= t) r++;
  }
  return r;
}

/**
 * A question's judgements made ready for repeated scoring: R, the positive grades in a Map (fast lookups whatever
 * the ids) and the ideal DCG curves (linear and exponential gain), computed once. Build it once per question and
 * threshold, then call {@link scorePrepared} for every ranking. A copy: later changes to the judgements do not
 * reach it.
 */
export interface PreparedJudgements {
  /** Documents with grade > 0 → grade (grades ≤ 0 and unjudged documents score alike: not relevant, gain 0). */
  readonly positive: ReadonlyMap<string, number>;
  /**
   * Documents judged with grade ≤ 0 (judged not relevant). With `positive` this is the judged set that `judged@k`,
   * `bpref` and the condensed measures read; the classic measures never look at it.
   */
  readonly judgedNotPositive: ReadonlySet<string>;
  /** N: judged documents with grade < threshold (grade ≤ 0 included), bpref's non-relevant count. */
  readonly nonRelevant: number;
  /** Relevance threshold, integer ≥ 1. */
  readonly threshold: number;
  /** R. */
  readonly relevant: number;
  /** IDCG@d with gain = grade for d = 0..(grades > 0); see `idealDcgCurve`. */
  readonly idealLinear: Float64Array;
  /** IDCG@d with gain = 2^grade − 1. */
  readonly idealExp: Float64Array;
}

/**
 * Prepares judgements (document id → grade, as a plain object or a Map) for scoring. Non-numeric grades are ignored.
 * @throws HarnessError `USAGE` when the threshold is not an integer ≥ 1.
 */
export function prepareJudgements(
  judgements: Readonly<Record<string, number>> | ReadonlyMap<string, number>,
  options?: ScoreOptions,
): PreparedJudgements {
  const threshold = resolveThreshold(options);
  const gains: number[] = [];
  const positive = new Map<string, number>();
  const judgedNotPositive = new Set<string>();
  let relevant = 0;
  if (judgements instanceof Map) {
    for (const [id, g] of judgements as ReadonlyMap<string, number>) {
      if (typeof g !== 'number' || Number.isNaN(g)) continue;
      if (!(g > 0)) {
        judgedNotPositive.add(id);
        continue;
      }
      positive.set(id, g);
      gains.push(g);
      if (g >= threshold) relevant++;
    }
  } else {
    const record = judgements as Readonly<Record<string, number>>;
    for (const id in record) {
      if (!Object.prototype.hasOwnProperty.call(record, id)) continue;
      const g = record[id];
      if (typeof g !== 'number' || Number.isNaN(g)) continue;
      if (!(g > 0)) {
        judgedNotPositive.add(id);
        continue;
      }
      positive.set(id, g);
      gains.push(g);
      if (g >= threshold) relevant++;
    }
  }
  return {
    positive,
    judgedNotPositive,
    nonRelevant: positive.size + judgedNotPositive.size - relevant,
    threshold,
    relevant,
    idealLinear: idealDcgCurve(gains, linearGain),
    idealExp: idealDcgCurve(gains, exponentialGain),
  };
}

const enum Fam {
  HitRate,
  Recall,
  Precision,
  Mrr,
  Ndcg,
  NdcgExp,
  Map,
  RPrecision,
  /** trec_eval `map`: average precision over the whole ranking (measure `map`, k null). */
  MapAll,
  /** trec_eval `recip_rank`: reciprocal rank over the whole ranking. */
  RecipRank,
  /** trec_eval `ndcg`: ndcg over the whole ranking (measure `ndcg`, k null). */
  NdcgAll,
}

/** Codes of the classic families; `judged` and `bpref` are scored outside the one pass (see {@link ExtendedPlan}). */
const FAMILY_CODE: Record<Exclude<Measure['family'], 'judged' | 'bpref'>, Fam> = {
  hit_rate: Fam.HitRate,
  recall: Fam.Recall,
  precision: Fam.Precision,
  mrr: Fam.Mrr,
  ndcg: Fam.Ndcg,
  ndcg_exp: Fam.NdcgExp,
  map: Fam.Map,
  r_precision: Fam.RPrecision,
  recip_rank: Fam.RecipRank,
};

/** Number of running sums recorded at each cutoff: relevant count, DCG linear, DCG exponential, precision sum. */
const SLOTS = 4;

/**
 * A list of measures compiled for {@link scorePrepared}: canonical names, the distinct cutoffs in ascending order,
 * and a scratch buffer. Build once per measure list. Not shareable between two scorings running at the same time
 * (JavaScript runs one at a time, so this only matters if a scoring is re-entered, which it never is).
 */
export interface MeasurePlan {
  /** Canonical names, in the order given. */
  readonly names: readonly string[];
  /** The measures, copied. */
  readonly measures: readonly Measure[];
  /** Distinct cutoffs, ascending. */
  readonly cutoffs: readonly number[];
  /** Largest cutoff, 0 when only r_precision or uncut measures are asked. */
  readonly maxK: number;
  readonly hasRPrecision: boolean;
  /** Uncut `map`, `ndcg` or `recip_rank` is asked: the whole ranking is read. */
  readonly hasUncutMap: boolean;
  /**
   * @internal Set when the list holds `judged@k`, `bpref` or a condensed measure: those are scored around the one
   * pass of the classic measures (which then run on `extended.core`); null for a list of classic measures only,
   * whose scoring is exactly the one pass.
   */
  readonly extended: ExtendedPlan | null;
  /** @internal family code per measure */
  readonly codes: Int32Array;
  /** @internal index into `cutoffs` per measure (−1 for r_precision) */
  readonly cutoffOf: Int32Array;
  /** @internal running sums at each cutoff, SLOTS per cutoff */
  readonly scratch: Float64Array;
}

/**
 * @internal How a plan with judged-aware measures is scored: the classic uncondensed measures in one pass
 * (`core`), `judged@k` and `bpref` on the ranking, and the condensed measures by `condensed` on the condensed list.
 */
interface ExtendedPlan {
  readonly core: MeasurePlan;
  /** The condensed measures' plan (the same measures without `condensed`), null when there are none. */
  readonly condensed: MeasurePlan | null;
  /** Per measure of the outer plan: where its value comes from. */
  readonly source: readonly ('core' | 'condensed' | 'judged' | 'bpref')[];
  /** Per measure: the name it has in its source plan (`ndcg@10` for `ndcg_condensed@10`). */
  readonly sourceName: readonly string[];
  /** Largest judged@k cutoff, 0 when none is asked. */
  readonly maxJudgedK: number;
  readonly hasBpref: boolean;
}

function planExtended(measures: readonly Measure[], names: readonly string[]): ExtendedPlan {
  const core: Measure[] = [];
  const condensed: Measure[] = [];
  const source: ('core' | 'condensed' | 'judged' | 'bpref')[] = [];
  const sourceName: string[] = [];
  let maxJudgedK = 0;
  let hasBpref = false;
  measures.forEach((m, i) => {
    if (m.condensed === true) {
      const base = { family: m.family, k: m.k };
      condensed.push(base);
      source.push('condensed');
      sourceName.push(formatMeasure(base));
    } else if (m.family === 'judged') {
      if ((m.k as number) > maxJudgedK) maxJudgedK = m.k as number;
      source.push('judged');
      sourceName.push(names[i]);
    } else if (m.family === 'bpref') {
      hasBpref = true;
      source.push('bpref');
      sourceName.push(names[i]);
    } else {
      core.push(m);
      source.push('core');
      sourceName.push(names[i]);
    }
  });
  return {
    core: planMeasures(core),
    condensed: condensed.length > 0 ? planMeasures(condensed) : null,
    source,
    sourceName,
    maxJudgedK,
    hasBpref,
  };
}

/**
 * Compiles `measures` for repeated scoring.
 * @throws HarnessError `MEASURE_UNKNOWN` when a measure is malformed (unknown family, bad or missing k, a condensed
 *   `judged`).
 */
export function planMeasures(measures: readonly Measure[]): MeasurePlan {
  const names = measures.map((m) => formatMeasure(m));
  const extended = measures.some((m) => m.condensed === true || m.family === 'judged' || m.family === 'bpref')
    ? planExtended(measures, names)
    : null;
  const cutoffs = [...new Set(measures.filter((m) => m.k !== null).map((m) => m.k as number))].sort((a, b) => a - b);
  const codes = new Int32Array(measures.length);
  const cutoffOf = new Int32Array(measures.length);
  let hasRPrecision = false;
  let hasUncutMap = false;
  measures.forEach((m, i) => {
    if (extended !== null) return; // scored through extended.core and the judged-aware paths
    codes[i] = FAMILY_CODE[m.family as keyof typeof FAMILY_CODE];
    if (m.k === null) {
      if (m.family === 'map') {
        hasUncutMap = true;
        codes[i] = Fam.MapAll;
      } else if (m.family === 'ndcg') {
        hasUncutMap = true;
        codes[i] = Fam.NdcgAll;
      } else if (m.family === 'recip_rank') {
        hasUncutMap = true;
      } else hasRPrecision = true;
      cutoffOf[i] = -1;
    } else {
      if (!isValidCutoff(m.k)) throw new Error(`unreachable: formatMeasure accepted k=${m.k}`);
      cutoffOf[i] = cutoffs.indexOf(m.k);
    }
  });
  return {
    names,
    measures: measures.map((m) => ({ ...m })),
    cutoffs: extended !== null ? [] : cutoffs,
    maxK: cutoffs.length > 0 ? cutoffs[cutoffs.length - 1] : 0,
    hasRPrecision,
    hasUncutMap,
    codes,
    cutoffOf,
    scratch: new Float64Array(extended !== null ? 0 : cutoffs.length * SLOTS),
    extended,
  };
}

/**
 * The judged-aware path of {@link scorePrepared}: the classic measures in one pass over the ranking, then judged@k,
 * bpref and the condensed measures, values assembled in the plan's order.
 */
function scoreExtended(ranking: readonly string[], prepared: PreparedJudgements, plan: MeasurePlan, ext: ExtendedPlan): RankingScore {
  const { positive, judgedNotPositive } = prepared;
  const base = scorePrepared(ranking, prepared, ext.core);
  const isJudged = (id: string): boolean => positive.has(id) || judgedNotPositive.has(id);
  const condensedValues =
    ext.condensed !== null ? scorePrepared(condenseRanking(ranking, isJudged), prepared, ext.condensed).values : null;
  let judgedPrefix: Int32Array | null = null;
  if (ext.maxJudgedK > 0) {
    // judgedPrefix[k] = judged slots among ranks 1..k (k beyond the ranking: the count stops growing)
    judgedPrefix = new Int32Array(ext.maxJudgedK + 1);
    const depth = ranking.length < ext.maxJudgedK ? ranking.length : ext.maxJudgedK;
    const seen = new Set<string>();
    let n = 0;
    for (let i = 0; i < ext.maxJudgedK; i++) {
      if (i < depth && isJudged(ranking[i]) && !seen.has(ranking[i])) {
        seen.add(ranking[i]);
        n++;
      }
      judgedPrefix[i + 1] = n;
    }
  }
  const bprefValue = ext.hasBpref
    ? bpref(
        ranking,
        (id) => {
          const g = positive.get(id);
          return g !== undefined ? g : judgedNotPositive.has(id) ? 0 : undefined;
        },
        prepared.threshold,
        prepared.relevant,
        prepared.nonRelevant,
      )
    : 0;
  const values: Record<string, number> = {};
  const { names, measures } = plan;
  for (let m = 0; m < names.length; m++) {
    switch (ext.source[m]) {
      case 'core':
        values[names[m]] = base.values[ext.sourceName[m]];
        break;
      case 'condensed':
        values[names[m]] = (condensedValues as Record<string, number>)[ext.sourceName[m]];
        break;
      case 'judged': {
        const k = measures[m].k as number;
        values[names[m]] = judgedAt((judgedPrefix as Int32Array)[k], k);
        break;
      }
      case 'bpref':
        values[names[m]] = bprefValue;
        break;
    }
  }
  return { values, firstRelevantRank: base.firstRelevantRank, relevant: base.relevant };
}

/**
 * Scores one ranking against prepared judgements, computing every measure of the plan in one pass over the top
 * max(largest k, R if r_precision is asked) slots, or over the whole ranking when uncut `map` is asked.
 * @param ranking document ids in rank order (index 0 = rank 1); may be empty, shorter or longer than k, and may
 *   repeat ids (a repeat is a non-relevant slot). Not changed.
 */
export function scorePrepared(ranking: readonly string[], prepared: PreparedJudgements, plan: MeasurePlan): RankingScore {
  if (plan.extended !== null) return scoreExtended(ranking, prepared, plan, plan.extended);
  const { positive, threshold, relevant } = prepared;
  const { cutoffs, scratch } = plan;
  const nc = cutoffs.length;
  const depthWanted = plan.hasUncutMap
    ? ranking.length
    : plan.hasRPrecision && relevant > plan.maxK
      ? relevant
      : plan.maxK;
  const depth = ranking.length < depthWanted ? ranking.length : depthWanted;

  let rel = 0;
  let dcgLin = 0;
  let dcgExp = 0;
  let precisionSum = 0;
  let first = 0;
  let relAtR = -1;
  let ci = 0;
  // Documents with grade > 0 already credited at an earlier slot: a short array, a Set once it grows.
  let creditedList: string[] | null = null;
  let creditedSet: Set<string> | null = null;

  for (let i = 0; i < depth; i++) {
    const rank = i + 1;
    const id = ranking[i];
    const g = positive.get(id);
    if (g !== undefined) {
      let seen: boolean;
      if (creditedSet !== null) {
        seen = creditedSet.has(id);
        if (!seen) creditedSet.add(id);
      } else if (creditedList === null) {
        seen = false;
        creditedList = [id];
      } else {
        seen = creditedList.includes(id);
        if (!seen) {
          creditedList.push(id);
          if (creditedList.length > 32) creditedSet = new Set(creditedList);
        }
      }
      if (!seen) {
        const d = discountDenominator(rank);
        dcgLin += g / d;
        dcgExp += exponentialGain(g) / d;
        if (g >= threshold) {
          rel++;
          precisionSum += precisionAtRelevantSlot(rel, rank);
          if (first === 0) first = rank;
        }
      }
    }
    while (ci < nc && cutoffs[ci] === rank) {
      const o = ci * SLOTS;
      scratch[o] = rel;
      scratch[o + 1] = dcgLin;
      scratch[o + 2] = dcgExp;
      scratch[o + 3] = precisionSum;
      ci++;
    }
    if (rank === relevant) relAtR = rel;
  }
  // Cutoffs beyond the ranking's end: the running sums no longer change.
  for (; ci < nc; ci++) {
    const o = ci * SLOTS;
    scratch[o] = rel;
    scratch[o + 1] = dcgLin;
    scratch[o + 2] = dcgExp;
    scratch[o + 3] = precisionSum;
  }
  if (relAtR < 0) relAtR = rel;

  const values: Record<string, number> = {};
  const { names, codes, cutoffOf } = plan;
  for (let m = 0; m < names.length; m++) {
    const c = cutoffOf[m];
    const k = c >= 0 ? cutoffs[c] : 0;
    const o = c * SLOTS;
    let v: number;
    switch (codes[m] as Fam) {
      case Fam.HitRate:
        v = hitRateAt(first, k);
        break;
      case Fam.Recall:
        v = recallAt(scratch[o], relevant);
        break;
      case Fam.Precision:
        v = precisionAt(scratch[o], k);
        break;
      case Fam.Mrr:
        v = reciprocalRankAt(first, k);
        break;
      case Fam.Ndcg:
        v = ndcgAt(scratch[o + 1], idealDcgAt(prepared.idealLinear, k));
        break;
      case Fam.NdcgExp:
        v = ndcgAt(scratch[o + 2], idealDcgAt(prepared.idealExp, k));
        break;
      case Fam.Map:
        v = averagePrecisionAt(scratch[o + 3], relevant);
        break;
      case Fam.RPrecision:
        v = rPrecision(relAtR, relevant);
        break;
      case Fam.MapAll:
        v = averagePrecisionAt(precisionSum, relevant);
        break;
      case Fam.RecipRank:
        v = reciprocalRank(first);
        break;
      case Fam.NdcgAll:
        v = ndcgAt(dcgLin, prepared.idealLinear[prepared.idealLinear.length - 1]);
        break;
      default:
        throw new Error(`unreachable: family code ${codes[m]}`);
    }
    values[names[m]] = v;
  }
  const limit = plan.maxK > 0 ? plan.maxK : plan.hasUncutMap ? depth : relevant;
  return { values, firstRelevantRank: first > 0 && first <= limit ? first : null, relevant };
}

/**
 * Scores one ranking (document ids, index 0 = rank 1) against one question's judgements (document id → grade),
 * applying the policy in this module's header. The plan for `measures` is memoised per array (checked against the
 * array's contents on every call). For many rankings of one question, {@link prepareJudgements} once and call
 * {@link scorePrepared}: about 0.35 µs instead of about 1.5 µs per call (7 measures at k = 10).
 * When R = 0 every value is 0; such a question should be excluded from means (see {@link evaluate}).
 * @throws HarnessError `USAGE` for a bad threshold, `MEASURE_UNKNOWN` for a malformed measure.
 */
export function scoreRanking(
  ranking: readonly string[],
  judgements: Readonly<Record<string, number>>,
  measures: readonly Measure[],
  options?: ScoreOptions,
): RankingScore {
  return scorePrepared(ranking, prepareJudgements(judgements, options), cachedPlan(measures));
}

/** Plans already built, by measure list; an entry is reused only while the list still holds the same measures. */
const planCache = new WeakMap<readonly Measure[], MeasurePlan>();

function samePlan(plan: MeasurePlan, measures: readonly Measure[]): boolean {
  const kept = plan.measures;
  if (kept.length !== measures.length) return false;
  for (let i = 0; i < kept.length; i++) {
    if (kept[i].family !== measures[i].family || kept[i].k !== measures[i].k) return false;
    if ((kept[i].condensed === true) !== (measures[i].condensed === true)) return false;
  }
  return true;
}

function cachedPlan(measures: readonly Measure[]): MeasurePlan {
  const hit = planCache.get(measures);
  if (hit !== undefined && samePlan(hit, measures)) return hit;
  const plan = planMeasures(measures);
  planCache.set(measures, plan);
  return plan;
}

/** Judgements of a qrels file: qid → docno → grade. */
export type Qrels = Map<string, Map<string, number>>;
/** A run: qid → retrieved entries, in any order (they are ordered by the tie rule when scored). */
export type Run = Map<string, { docno: string; score: number }[]>;

/** Judgements of one question as {@link evaluate} accepts them: a Map or a plain object, docno → grade. */
export type JudgementsInput = ReadonlyMap<string, number> | Readonly<Record<string, number>>;
/**
 * Qrels as {@link evaluate} accepts them: a Map or a plain object `{ qid: { docno: grade } }` (as ir_measures and
 * ranx take them), the inner level a Map or a plain object too. Grades are integers in [−100, 100] (see
 * src/score/grades.ts; negative = not relevant, as trec_eval).
 */
export type QrelsInput = ReadonlyMap<string, JudgementsInput> | Readonly<Record<string, JudgementsInput>>;
/** One question's retrieved documents: `{ docno, score }` entries in any order, or docno → score (Map or object). */
export type RunEntriesInput =
  | readonly { docno: string; score: number }[]
  | ReadonlyMap<string, number>
  | Readonly<Record<string, number>>;
/** A run as {@link evaluate} accepts it: a Map or a plain object `{ qid: { docno: score } }` (or entry arrays). */
export type RunInput = ReadonlyMap<string, RunEntriesInput> | Readonly<Record<string, RunEntriesInput>>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Map) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function describeShape(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Map) return 'a Map';
  if (typeof v === 'object') return `a ${(v as object).constructor?.name ?? 'object'}`;
  const s = JSON.stringify(v);
  return `${typeof v} ${s === undefined ? String(v) : s.length > 40 ? `${s.slice(0, 37)}...` : s}`;
}

/** [key, value] pairs of a Map or a plain object; undefined for anything else. */
function pairsOf(v: unknown): [string, unknown][] | undefined {
  if (v instanceof Map) return [...(v as Map<unknown, unknown>)].map(([k, x]) => [k as string, x]);
  if (isPlainObject(v)) return Object.entries(v);
  return undefined;
}

function shapeError(code: 'QRELS_INVALID' | 'RUN_INVALID', path: string, expected: string, got: unknown): HarnessError {
  return new HarnessError(code, `${path} must be ${expected}, got ${describeShape(got)}`, {
    location: { path },
    remedy:
      code === 'QRELS_INVALID'
        ? 'pass qrels as a Map or a plain object { qid: { docno: grade } } (grades integers, 0 = not relevant), or read a file with readQrels'
        : 'pass the run as a Map or a plain object { qid: { docno: score } } (or { qid: [{ docno, score }] }), or read a file with readRun',
  });
}

/**
 * Checks qrels given as Maps or plain objects and returns them as {@link Qrels} (inner Maps that are already valid
 * are reused, not copied; nothing given is changed). Questions keep their order (a plain object lists integer-like
 * qids first, in ascending numeric order, as JavaScript does).
 * @throws HarnessError `QRELS_INVALID` with `location.path` (`qrels["q1"]["d3"]`) for a wrong shape (naming what
 *   was expected and what came), a qid or docno that is not a string, or a grade that is not an integer in
 *   [−100, 100].
 */
export function normaliseQrels(input: QrelsInput): Qrels {
  const outer = pairsOf(input);
  if (outer === undefined) throw shapeError('QRELS_INVALID', 'qrels', 'a Map or a plain object { qid: { docno: grade } }', input);
  const out: Qrels = new Map();
  for (const [qid, docs] of outer) {
    const qpath = `qrels[${JSON.stringify(qid)}]`;
    if (typeof qid !== 'string') throw shapeError('QRELS_INVALID', 'qrels', 'keyed by string qids', qid);
    const inner = pairsOf(docs);
    if (inner === undefined) throw shapeError('QRELS_INVALID', qpath, 'a Map or a plain object { docno: grade }', docs);
    for (const [docno, grade] of inner) {
      if (typeof docno !== 'string') throw shapeError('QRELS_INVALID', qpath, 'keyed by string docnos', docno);
      if (!isValidGrade(grade, MIN_TREC_GRADE)) {
        throw new HarnessError(
          'QRELS_INVALID',
          `${qpath}[${JSON.stringify(docno)}]: grade must be an integer from ${MIN_TREC_GRADE} to ${MAX_GRADE}, got ${describeShape(grade)}`,
          {
            location: { path: `${qpath}[${JSON.stringify(docno)}]` },
            remedy: 'grades are integers: 0 = judged not relevant, 1, 2, 3 ... more relevant (at most 100)',
          },
        );
      }
    }
    out.set(qid, docs instanceof Map ? (docs as Map<string, number>) : new Map(inner as [string, number][]));
  }
  return out;
}

/**
 * Checks a run given as Maps or plain objects and returns it as {@link Run} (entry arrays that are already valid
 * are reused, not copied; nothing given is changed).
 * @throws HarnessError `RUN_INVALID` with `location.path` for a wrong shape (naming what was expected), a docno
 *   that is not a string, or a score that is not a finite number.
 */
export function normaliseRun(input: RunInput): Run {
  const outer = pairsOf(input);
  if (outer === undefined) throw shapeError('RUN_INVALID', 'run', 'a Map or a plain object { qid: { docno: score } }', input);
  const out: Run = new Map();
  for (const [qid, entries] of outer) {
    const qpath = `run[${JSON.stringify(qid)}]`;
    if (typeof qid !== 'string') throw shapeError('RUN_INVALID', 'run', 'keyed by string qids', qid);
    let list: { docno: string; score: number }[];
    if (Array.isArray(entries)) {
      entries.forEach((e: unknown, i) => {
        const p = `${qpath}[${i}]`;
        if (e === null || typeof e !== 'object' || Array.isArray(e))
          throw shapeError('RUN_INVALID', p, 'an entry { docno, score }', e);
        const { docno, score } = e as { docno?: unknown; score?: unknown };
        if (typeof docno !== 'string') throw shapeError('RUN_INVALID', `${p}.docno`, 'a string', docno);
        if (typeof score !== 'number' || !Number.isFinite(score))
          throw shapeError('RUN_INVALID', `${p}.score`, 'a finite number', score);
      });
      list = entries as { docno: string; score: number }[];
    } else {
      const inner = pairsOf(entries);
      if (inner === undefined)
        throw shapeError('RUN_INVALID', qpath, 'a Map or a plain object { docno: score }, or an array of { docno, score }', entries);
      list = inner.map(([docno, score]) => {
        if (typeof docno !== 'string') throw shapeError('RUN_INVALID', qpath, 'keyed by string docnos', docno);
        if (typeof score !== 'number' || !Number.isFinite(score))
          throw shapeError('RUN_INVALID', `${qpath}[${JSON.stringify(docno)}]`, 'a finite number (the score)', score);
        return { docno, score };
      });
    }
    out.set(qid, list);
  }
  return out;
}

/** The outcome of {@link evaluate}. */
export interface EvaluationResult {
  /** Mean of each measure over the scored questions (canonical names); empty when no question is scorable. */
  mean: Record<string, number>;
  /**
   * Per scored question: canonical name → value. Excluded questions are absent. Keys follow qrels order, except
   * that JavaScript lists integer-like qids (`"12"`) first, in ascending numeric order.
   */
  perQuery: Record<string, Record<string, number>>;
  /** Qrels questions with no judgement ≥ threshold (R = 0), left out of the means, in qrels order. */
  excluded: string[];
  /** Run questions that are not in the qrels, in run order. */
  ignored: string[];
  /** Non-fatal findings: duplicate docnos in a run question, no scorable question. */
  warnings: string[];
}

/**
 * Orders a run question's entries by the tie rule (score descending, then docno descending) and returns the docnos
 * in rank order, with the docnos that occur more than once (each listed once, in first-seen rank order).
 * Does not change `entries`.
 */
export function rankRunEntries(entries: readonly { docno: string; score: number }[]): {
  ranking: string[];
  duplicates: string[];
} {
  const ranked = rankByRule(entries.map((e) => ({ id: e.docno, score: e.score })));
  const ranking = ranked.map((e) => e.id);
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const id of ranking) {
    if (seen.has(id)) dup.add(id);
    else seen.add(id);
  }
  return { ranking, duplicates: [...dup] };
}

/**
 * Evaluates a run against qrels, trec_eval style (`trec_eval -c` over the qrels questions), with this module's
 * policy: R = 0 questions excluded, missing run questions scored 0, unknown run questions ignored, duplicates warned.
 * @param qrelsInput Maps ({@link Qrels}, as `readQrels` gives) or plain objects `{ qid: { docno: grade } }`.
 * @param runInput Maps ({@link Run}, as `readRun` gives) or plain objects `{ qid: { docno: score } }` /
 *   `{ qid: [{ docno, score }] }`.
 * @param measures parsed measures (see `parseMeasure`, which also reads ir_measures and ranx names); results are
 *   keyed by canonical names.
 * @throws HarnessError `QRELS_INVALID` / `RUN_INVALID` for a wrong shape or value (see {@link normaliseQrels},
 *   {@link normaliseRun}), `USAGE` for a bad threshold, `MEASURE_UNKNOWN` for a malformed measure.
 */
export function evaluate(
  qrelsInput: QrelsInput,
  runInput: RunInput,
  measures: readonly Measure[],
  options?: ScoreOptions,
): EvaluationResult {
  const threshold = resolveThreshold(options);
  const qrels = normaliseQrels(qrelsInput);
  const run = normaliseRun(runInput);
  const plan = planMeasures(measures);
  const perQuery = Object.create(null) as Record<string, Record<string, number>>; // any qid, __proto__ included
  const excluded: string[] = [];
  const warnings: string[] = [];
  const sums = new Float64Array(plan.names.length);
  let scored = 0;

  for (const [qid, docs] of qrels) {
    const prepared = prepareJudgements(docs, { relevanceThreshold: threshold });
    if (prepared.relevant === 0) {
      excluded.push(qid);
      continue;
    }
    const entries = run.get(qid);
    let ranking: string[] = [];
    if (entries !== undefined) {
      const r = rankRunEntries(entries);
      ranking = r.ranking;
      if (r.duplicates.length > 0) {
        warnings.push(
          `run question ${qid}: docno ${r.duplicates.join(', ')} retrieved more than once; the first in rank order ` +
            'counts, later copies are non-relevant slots',
        );
      }
    }
    const s = scorePrepared(ranking, prepared, plan);
    perQuery[qid] = s.values;
    for (let m = 0; m < plan.names.length; m++) sums[m] += s.values[plan.names[m]];
    scored++;
  }

  const mean: Record<string, number> = {};
  if (scored > 0) {
    for (let m = 0; m < plan.names.length; m++) mean[plan.names[m]] = sums[m] / scored;
  } else {
    warnings.push(`no question has a judgement with grade >= ${threshold}; there are no means`);
  }
  const ignored = [...run.keys()].filter((qid) => !qrels.has(qid));
  return { mean, perQuery, excluded, ignored, warnings };
}
