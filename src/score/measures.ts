/**
 * Canonical measure names, the identity of a metric everywhere (config keys, JSON keys, CSV columns, CLI flags).
 *
 * A name is `<family>@<k>` with `k` a cutoff in ranks (an integer ≥ 1 written without sign or leading zeros), e.g.
 * `ndcg@10`, `hit_rate@5`; `r_precision` takes no cutoff and `map` alone is trec_eval's uncut `map`.
 * {@link parseMeasure} also reads the names of ir_measures, ranx and trec_eval ({@link MEASURE_ALIASES});
 * {@link formatMeasure} always writes the canonical name, and `formatMeasure(parseMeasure(s)) === s` for every
 * canonical `s`.
 */
import { closest, distance } from 'fastest-levenshtein';
import { HarnessError } from '../errors.js';

/** Metric families; the formulas and their trec_eval sources are in `src/score/metrics/*.ts` and docs/metrics.md. */
export type MeasureFamily =
  | 'hit_rate'
  | 'recall'
  | 'precision'
  | 'mrr'
  | 'ndcg'
  | 'ndcg_exp'
  | 'map'
  | 'r_precision';

/**
 * One measure: a family and its cutoff `k` (ranks, integer ≥ 1); `k` is `null` for `r_precision` and for uncut
 * `map` (trec_eval's `map`: average precision over the whole retrieved list).
 */
export interface Measure {
  family: MeasureFamily;
  k: number | null;
}

/** Every family, in the order reports list them. */
export const MEASURE_FAMILIES: readonly MeasureFamily[] = Object.freeze([
  'hit_rate',
  'recall',
  'precision',
  'mrr',
  'ndcg',
  'ndcg_exp',
  'map',
  'r_precision',
] as const);

/** Families that take no cutoff. */
const NO_CUTOFF: ReadonlySet<MeasureFamily> = new Set<MeasureFamily>(['r_precision']);
/** Families whose cutoff may be left out: `map` alone is trec_eval's `map`, average precision over every retrieved rank. */
const OPTIONAL_CUTOFF: ReadonlySet<MeasureFamily> = new Set<MeasureFamily>(['map']);

/** Families {@link measuresAtK} returns when none are given: every family that takes a cutoff. */
export const DEFAULT_FAMILIES_AT_K: readonly MeasureFamily[] = Object.freeze(
  MEASURE_FAMILIES.filter((f) => !NO_CUTOFF.has(f)),
);

/** The known names as a user reads them: `hit_rate@k, recall@k, ..., map@k, map, r_precision`. */
export const KNOWN_MEASURE_NAMES: string = MEASURE_FAMILIES.flatMap((f) =>
  NO_CUTOFF.has(f) ? [f] : OPTIONAL_CUTOFF.has(f) ? [`${f}@k`, f] : [`${f}@k`],
).join(', ');

/**
 * Names other tools give our measures, matched case-insensitively, each with the canonical family it parses to.
 * Only exact equivalents are listed (same formula, same trec_eval conventions):
 * - ir_measures (MacAvaney et al. 2022): `nDCG` (linear gain, trec_eval `ndcg_cut`), `P`, `R`, `RR`, `AP`,
 *   `Success`, `Rprec`;
 * - ranx (Bassani 2022): `hit_rate`, `precision`, `recall`, `mrr`, `map`, `ndcg` (linear gain), `ndcg_burges`
 *   (gain 2^grade − 1, our `ndcg_exp`), `r-precision` (ranx `hits@k` is a count, not a hit rate, and is not an alias);
 * - trec_eval (written `P_5`, `recall_10`, `ndcg_cut_10`, `map_cut_10`, `success_5`, see {@link TREC_EVAL_NAMES}):
 *   `Rprec`, `map`.
 * ir_measures parameters such as `P(rel=2)@5` are refused (use the relevance threshold instead).
 */
export const MEASURE_ALIASES: Readonly<Record<string, MeasureFamily>> = Object.freeze({
  ndcg: 'ndcg',
  p: 'precision',
  r: 'recall',
  rr: 'mrr',
  ap: 'map',
  success: 'hit_rate',
  rprec: 'r_precision',
  hit_rate: 'hit_rate',
  precision: 'precision',
  recall: 'recall',
  mrr: 'mrr',
  map: 'map',
  ndcg_burges: 'ndcg_exp',
  ndcg_exp: 'ndcg_exp',
  'r-precision': 'r_precision',
  r_precision: 'r_precision',
});

/** trec_eval's `<measure>_<k>` names (`trec_eval -m P.5` prints `P_5`), matched case-insensitively. */
export const TREC_EVAL_NAMES: Readonly<Record<string, MeasureFamily>> = Object.freeze({
  p: 'precision',
  recall: 'recall',
  ndcg_cut: 'ndcg',
  map_cut: 'map',
  success: 'hit_rate',
});

const K_PATTERN = /^[1-9][0-9]*$/;
const TREC_EVAL_PATTERN = /^(p|recall|ndcg_cut|map_cut|success)_([0-9]+)$/i;

function isFamily(s: string): s is MeasureFamily {
  return (MEASURE_FAMILIES as readonly string[]).includes(s);
}

/** True when `k` is a valid cutoff: a safe integer ≥ 1. */
export function isValidCutoff(k: unknown): k is number {
  return typeof k === 'number' && Number.isSafeInteger(k) && k >= 1;
}

/** Every written family form a user may give (canonical families and aliases), for suggestions. */
const SPELLINGS: readonly string[] = [...new Set([...MEASURE_FAMILIES, ...Object.keys(MEASURE_ALIASES)])];

function unknown(name: string, why: string): HarnessError {
  return new HarnessError('MEASURE_UNKNOWN', `unknown measure ${JSON.stringify(name)}: ${why}`, {
    remedy:
      `use one of ${KNOWN_MEASURE_NAMES} (k an integer >= 1, e.g. ndcg@10); ir_measures, ranx and trec_eval names ` +
      'such as nDCG@10, P@5, RR@10, AP@100, Success@5, ndcg_burges@10, P_5 are read too (docs/metrics.md)',
  });
}

function suggestion(family: string): string {
  const lower = family.toLowerCase();
  const best = closest(lower, SPELLINGS as string[]);
  const d = best === undefined ? Infinity : distance(lower, best);
  return d <= 2 && d < lower.length
    ? `; did you mean ${best}?`
    : '';
}

/**
 * Parses a measure name to its family and cutoff. Accepted:
 * - the canonical names `<family>@<k>` (`ndcg@10`, `hit_rate@5`), `map` (trec_eval's `map`: average precision over
 *   every retrieved rank) and `r_precision`;
 * - the aliases of {@link MEASURE_ALIASES} (ir_measures `nDCG@10`, `P@5`, `R@10`, `RR@10`, `AP@100`, `AP`,
 *   `Success@5`, `Rprec`; ranx `ndcg_burges@10`, `r-precision`), family part matched case-insensitively;
 * - trec_eval's `P_5`, `recall_10`, `ndcg_cut_10`, `map_cut_10`, `success_5` ({@link TREC_EVAL_NAMES}).
 * No spaces; `k` written as an integer ≥ 1 without sign or leading zeros. {@link formatMeasure} gives the canonical
 * name back: `formatMeasure(parseMeasure(s)) === s` for every canonical `s`, and `'precision@5'` for `'P@5'`.
 * @throws HarnessError `MEASURE_UNKNOWN` naming the value (with the nearest known spelling when one is close) and
 *   listing {@link KNOWN_MEASURE_NAMES}.
 */
export function parseMeasure(name: string): Measure {
  if (typeof name !== 'string') throw unknown(String(name), 'not a string');
  const trec = TREC_EVAL_PATTERN.exec(name);
  if (trec !== null) {
    const family = TREC_EVAL_NAMES[trec[1].toLowerCase()];
    return { family, k: parseCutoff(name, trec[2]) };
  }
  const at = name.indexOf('@');
  const written = at < 0 ? name : name.slice(0, at);
  if (written.includes('(')) {
    throw unknown(name, 'measure parameters such as (rel=2) are not supported; set the relevance threshold instead');
  }
  const family: MeasureFamily | undefined = isFamily(written) ? written : MEASURE_ALIASES[written.toLowerCase()];
  if (family === undefined) throw unknown(name, `no measure family ${JSON.stringify(written)}${suggestion(written)}`);
  if (NO_CUTOFF.has(family)) {
    if (at >= 0) throw unknown(name, `${written} takes no cutoff (write ${family})`);
    return { family, k: null };
  }
  if (at < 0) {
    if (OPTIONAL_CUTOFF.has(family)) return { family, k: null };
    throw unknown(name, `${written} needs a cutoff (write ${family}@10)`);
  }
  return { family, k: parseCutoff(name, name.slice(at + 1)) };
}

function parseCutoff(name: string, kText: string): number {
  const k = Number(kText);
  if (!K_PATTERN.test(kText) || !isValidCutoff(k)) {
    throw unknown(name, `cutoff ${JSON.stringify(kText)} is not an integer >= 1 written without leading zeros`);
  }
  return k;
}

/** The canonical name of any accepted measure name: `canonicalMeasureName('nDCG@10') === 'ndcg@10'`. */
export function canonicalMeasureName(name: string): string {
  return formatMeasure(parseMeasure(name));
}

/**
 * Canonical name of a measure: `<family>@<k>`, or the bare family for `r_precision` and for `map` with `k: null`.
 * @throws HarnessError `MEASURE_UNKNOWN` when the family is unknown or `k` does not fit it (missing, not an
 *   integer ≥ 1, or given to `r_precision`).
 */
export function formatMeasure(m: Measure): string {
  if (!isFamily(m.family)) throw unknown(String(m.family), `no measure family ${JSON.stringify(m.family)}`);
  if (NO_CUTOFF.has(m.family)) {
    if (m.k !== null) throw unknown(`${m.family}@${m.k}`, `${m.family} takes no cutoff (k must be null)`);
    return m.family;
  }
  if (m.k === null && OPTIONAL_CUTOFF.has(m.family)) return m.family;
  if (!isValidCutoff(m.k)) throw unknown(`${m.family}@${m.k}`, `cutoff ${String(m.k)} is not an integer >= 1`);
  return `${m.family}@${m.k}`;
}

/**
 * The measures of `families` at cutoff `k`, in the order given. Default families: hit_rate, recall, precision, mrr,
 * ndcg, ndcg_exp, map ({@link DEFAULT_FAMILIES_AT_K}). `r_precision`, if listed, comes back with `k: null`.
 * @throws HarnessError `MEASURE_UNKNOWN` when `k` is not an integer ≥ 1 or a family is unknown.
 */
export function measuresAtK(k: number, families: readonly MeasureFamily[] = DEFAULT_FAMILIES_AT_K): Measure[] {
  if (!isValidCutoff(k)) throw unknown(`@${String(k)}`, `cutoff ${String(k)} is not an integer >= 1`);
  return families.map((family) => {
    if (!isFamily(family)) throw unknown(String(family), `no measure family ${JSON.stringify(family)}`);
    return { family, k: NO_CUTOFF.has(family) ? null : k };
  });
}

/** True when the family may be named without a cutoff (`map`, trec_eval's uncut average precision). */
export function cutoffIsOptional(family: MeasureFamily): boolean {
  return OPTIONAL_CUTOFF.has(family);
}

/** True when the family takes no cutoff (`r_precision`). */
export function takesNoCutoff(family: MeasureFamily): boolean {
  return NO_CUTOFF.has(family);
}
