/**
 * Canonical measure names, the identity of a metric everywhere (config keys, JSON keys, CSV columns, CLI flags).
 *
 * A name is `<family>@<k>` with `k` a cutoff in ranks (an integer ≥ 1 written without sign or leading zeros), e.g.
 * `ndcg@10`, `hit_rate@5`, `judged@10`; `r_precision`, `recip_rank` and `bpref` take no cutoff, and `map` and `ndcg`
 * alone are trec_eval's uncut `map` and `ndcg` (over every retrieved rank). Any family but `judged` has a condensed
 * form (trec_eval `-J`, Sakai's condensed lists: unjudged documents removed from the ranking first), written
 * `<family>_condensed@<k>` or `<family>_condensed` (`ndcg_condensed@10`, `recip_rank_condensed`, `bpref_condensed`).
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
  | 'r_precision'
  | 'recip_rank'
  | 'bpref'
  | 'judged';

/**
 * One measure: a family and its cutoff `k` (ranks, integer ≥ 1); `k` is `null` for `r_precision`, `recip_rank`,
 * `bpref` and for uncut `map` and `ndcg` (trec_eval's `map` and `ndcg`: over the whole retrieved list).
 * `condensed: true` computes it on the condensed list (unjudged documents removed from the ranking first, trec_eval
 * `-J`); absent or false: on the ranking as given. `judged` has no condensed form.
 */
export interface Measure {
  family: MeasureFamily;
  k: number | null;
  condensed?: boolean;
}

/**
 * The classic families (trec_eval's rank measures), in the order reports list them. The sweep's rows and
 * {@link DEFAULT_FAMILIES_AT_K} are drawn from these; {@link ALL_MEASURE_FAMILIES} adds `recip_rank`, `bpref` and
 * `judged`.
 */
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

/**
 * Every family: {@link MEASURE_FAMILIES}, then `recip_rank` (trec_eval `recip_rank`, no cutoff), `bpref` (trec_eval
 * `bpref`) and `judged` (ir_measures `Judged@k`).
 */
export const ALL_MEASURE_FAMILIES: readonly MeasureFamily[] = Object.freeze([
  ...MEASURE_FAMILIES,
  'recip_rank',
  'bpref',
  'judged',
] as const);

/** Families that take no cutoff. */
const NO_CUTOFF: ReadonlySet<MeasureFamily> = new Set<MeasureFamily>(['r_precision', 'recip_rank', 'bpref']);
/**
 * Families whose cutoff may be left out: `map` and `ndcg` alone are trec_eval's `map` and `ndcg`, over every
 * retrieved rank.
 */
const OPTIONAL_CUTOFF: ReadonlySet<MeasureFamily> = new Set<MeasureFamily>(['map', 'ndcg']);
/** Families with no condensed form: `judged` of a condensed list is trivially 1 where the list is long enough. */
const NO_CONDENSED: ReadonlySet<MeasureFamily> = new Set<MeasureFamily>(['judged']);
/** The suffix of a condensed family: `ndcg_condensed@10`. */
export const CONDENSED_SUFFIX = '_condensed';

/**
 * Families {@link measuresAtK} returns when none are given: the classic families that take a cutoff (hit_rate,
 * recall, precision, mrr, ndcg, ndcg_exp, map).
 */
export const DEFAULT_FAMILIES_AT_K: readonly MeasureFamily[] = Object.freeze(
  MEASURE_FAMILIES.filter((f) => f !== 'r_precision'),
);

/**
 * The known names as a user reads them: `hit_rate@k, recall@k, ..., map@k, map, r_precision, recip_rank, bpref,
 * judged@k`, then the condensed forms.
 */
export const KNOWN_MEASURE_NAMES: string = [
  ...ALL_MEASURE_FAMILIES.flatMap((f) =>
    NO_CUTOFF.has(f) ? [f] : OPTIONAL_CUTOFF.has(f) ? [`${f}@k`, f] : [`${f}@k`],
  ),
  '<any of these but judged>_condensed (e.g. ndcg_condensed@10, bpref_condensed)',
].join(', ');

/**
 * Names other tools give our measures, matched case-insensitively, each with the canonical family it parses to.
 * Only exact equivalents are listed (same formula, same trec_eval conventions):
 * - ir_measures (MacAvaney et al. 2022): `nDCG` (linear gain, trec_eval `ndcg_cut`), `P`, `R`, `RR`, `AP`,
 *   `Success`, `Rprec`;
 * - ranx (Bassani 2022): `hit_rate`, `precision`, `recall`, `mrr`, `map`, `ndcg` (linear gain), `ndcg_burges`
 *   (gain 2^grade − 1, our `ndcg_exp`), `r-precision` (ranx `hits@k` is a count, not a hit rate, and is not an alias);
 * - trec_eval (written `P_5`, `recall_10`, `ndcg_cut_10`, `map_cut_10`, `success_5`, see {@link TREC_EVAL_NAMES}):
 *   `Rprec`, `map`, `ndcg`, `recip_rank`, `bpref`;
 * - ir_measures `Bpref`, `Judged@k`.
 * `RR`, `mrr` (and `recip_rank`) without a cutoff are trec_eval's `recip_rank`, the reciprocal rank over every
 * retrieved rank (canonical name `recip_rank`; `mrr@k` is the same cut at k).
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
  recip_rank: 'recip_rank',
  bpref: 'bpref',
  judged: 'judged',
});

/** Families whose name without a cutoff means another family: `RR`, `mrr` alone are trec_eval's `recip_rank`. */
const UNCUT_FAMILY: Readonly<Partial<Record<MeasureFamily, MeasureFamily>>> = Object.freeze({ mrr: 'recip_rank' });

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
  return (ALL_MEASURE_FAMILIES as readonly string[]).includes(s);
}

/** True when `k` is a valid cutoff: a safe integer ≥ 1. */
export function isValidCutoff(k: unknown): k is number {
  return typeof k === 'number' && Number.isSafeInteger(k) && k >= 1;
}

/** Every written family form a user may give (canonical families and aliases), for suggestions. */
const SPELLINGS: readonly string[] = [...new Set([...ALL_MEASURE_FAMILIES, ...Object.keys(MEASURE_ALIASES)])];

function unknown(name: string, why: string): HarnessError {
  return new HarnessError('MEASURE_UNKNOWN', `unknown measure ${JSON.stringify(name)}: ${why}`, {
    remedy:
      `use one of ${KNOWN_MEASURE_NAMES} (k an integer >= 1, e.g. ndcg@10); ir_measures, ranx and trec_eval names ` +
      'such as nDCG@10, P@5, RR@10, RR, AP@100, Success@5, Bpref, Judged@10, ndcg_burges@10, P_5 are read too (docs/metrics.md)',
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
 * - the canonical names `<family>@<k>` (`ndcg@10`, `hit_rate@5`, `judged@10`), `map` and `ndcg` (trec_eval's `map`
 *   and `ndcg`: over every retrieved rank), `r_precision`, `recip_rank` and `bpref`;
 * - the aliases of {@link MEASURE_ALIASES} (ir_measures `nDCG@10`, `P@5`, `R@10`, `RR@10`, `AP@100`, `AP`,
 *   `Success@5`, `Rprec`, `Bpref`, `Judged@10`; ranx `ndcg_burges@10`, `r-precision`), family part matched
 *   case-insensitively; `RR` and `mrr` without a cutoff parse to `recip_rank`;
 * - trec_eval's `P_5`, `recall_10`, `ndcg_cut_10`, `map_cut_10`, `success_5` ({@link TREC_EVAL_NAMES});
 * - any of these but `judged` with `_condensed` after the family (`ndcg_condensed@10`, `RR_condensed`,
 *   `bpref_condensed`): `condensed: true`.
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
  let written = at < 0 ? name : name.slice(0, at);
  if (written.includes('(')) {
    throw unknown(name, 'measure parameters such as (rel=2) are not supported; set the relevance threshold instead');
  }
  const condensed = written.length > CONDENSED_SUFFIX.length && written.toLowerCase().endsWith(CONDENSED_SUFFIX);
  if (condensed) written = written.slice(0, -CONDENSED_SUFFIX.length);
  let family: MeasureFamily | undefined = isFamily(written) ? written : MEASURE_ALIASES[written.toLowerCase()];
  if (family === undefined) throw unknown(name, `no measure family ${JSON.stringify(written)}${suggestion(written)}`);
  if (condensed && NO_CONDENSED.has(family)) {
    throw unknown(name, `${family} has no condensed form (the share judged of a list of judged documents says nothing)`);
  }
  if (at < 0) family = UNCUT_FAMILY[family] ?? family;
  const flag = condensed ? { condensed: true } : {};
  if (NO_CUTOFF.has(family)) {
    if (at >= 0) throw unknown(name, `${written} takes no cutoff (write ${family})`);
    return { family, k: null, ...flag };
  }
  if (at < 0) {
    if (OPTIONAL_CUTOFF.has(family)) return { family, k: null, ...flag };
    throw unknown(name, `${written} needs a cutoff (write ${family}@10)`);
  }
  return { family, k: parseCutoff(name, name.slice(at + 1)), ...flag };
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
 * Canonical name of a measure: `<family>@<k>`, or the bare family for `r_precision`, `recip_rank`, `bpref` and for
 * `map` and `ndcg` with `k: null`; `_condensed` follows the family when `condensed` is true (`ndcg_condensed@10`).
 * @throws HarnessError `MEASURE_UNKNOWN` when the family is unknown, `k` does not fit it (missing, not an
 *   integer ≥ 1, or given to a family without cutoff), or `condensed` is asked of `judged`.
 */
export function formatMeasure(m: Measure): string {
  if (!isFamily(m.family)) throw unknown(String(m.family), `no measure family ${JSON.stringify(m.family)}`);
  const c = m.condensed === true;
  if (c && NO_CONDENSED.has(m.family)) throw unknown(`${m.family}${CONDENSED_SUFFIX}`, `${m.family} has no condensed form`);
  const fam = c ? `${m.family}${CONDENSED_SUFFIX}` : m.family;
  if (NO_CUTOFF.has(m.family)) {
    if (m.k !== null) throw unknown(`${fam}@${m.k}`, `${m.family} takes no cutoff (k must be null)`);
    return fam;
  }
  if (m.k === null && OPTIONAL_CUTOFF.has(m.family)) return fam;
  if (!isValidCutoff(m.k)) throw unknown(`${fam}@${m.k}`, `cutoff ${String(m.k)} is not an integer >= 1`);
  return `${fam}@${m.k}`;
}

/** The measure on condensed lists (trec_eval `-J`): a copy with `condensed: true`; null for `judged`, which has none. */
export function condensedMeasure(m: Measure): Measure | null {
  return NO_CONDENSED.has(m.family) ? null : { family: m.family, k: m.k, condensed: true };
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

/** True when the family may be named without a cutoff (`map`, `ndcg`: trec_eval's uncut measures). */
export function cutoffIsOptional(family: MeasureFamily): boolean {
  return OPTIONAL_CUTOFF.has(family);
}

/** True when the family takes no cutoff (`r_precision`, `recip_rank`, `bpref`). */
export function takesNoCutoff(family: MeasureFamily): boolean {
  return NO_CUTOFF.has(family);
}

/**
 * The measures a sweep row is scored on at cutoff k (levels document and chunk): `families` at k (the classic row
 * families), then `judged@k`, then with `condensed` each family's condensed form at k (`ndcg_condensed@10`), in that
 * order. The classic measures come first and are computed exactly as without the others.
 * @throws HarnessError `MEASURE_UNKNOWN` when `k` is not an integer ≥ 1 or a family is unknown.
 */
export function rowMeasuresAt(k: number, families: readonly MeasureFamily[], options: { condensed: boolean }): Measure[] {
  const base = measuresAtK(k, families);
  const judged: Measure = { family: 'judged', k };
  if (!options.condensed) return [...base, judged];
  return [...base, judged, ...base.map((m) => condensedMeasure(m)).filter((m): m is Measure => m !== null)];
}
