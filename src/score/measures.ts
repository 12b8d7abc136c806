/**
 * Canonical measure names, the identity of a metric everywhere (config keys, JSON keys, CSV columns, CLI flags).
 *
 * A name is `<family>@<k>` with `k` a cutoff in ranks (an integer ≥ 1 written without sign or leading zeros), e.g.
 * `ndcg@10`, `hit_rate@5`; `r_precision` alone takes no cutoff. {@link parseMeasure} and {@link formatMeasure}
 * round-trip exactly: `formatMeasure(parseMeasure(s)) === s` for every accepted `s`.
 */
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

/** One measure: a family and its cutoff `k` (ranks, integer ≥ 1); `k` is `null` only for `r_precision`. */
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

/** Families {@link measuresAtK} returns when none are given: every family that takes a cutoff. */
export const DEFAULT_FAMILIES_AT_K: readonly MeasureFamily[] = Object.freeze(
  MEASURE_FAMILIES.filter((f) => !NO_CUTOFF.has(f)),
);

/** The known names as a user reads them: `hit_rate@k, recall@k, ..., r_precision`. */
export const KNOWN_MEASURE_NAMES: string = MEASURE_FAMILIES.map((f) => (NO_CUTOFF.has(f) ? f : `${f}@k`)).join(', ');

const K_PATTERN = /^[1-9][0-9]*$/;

function isFamily(s: string): s is MeasureFamily {
  return (MEASURE_FAMILIES as readonly string[]).includes(s);
}

/** True when `k` is a valid cutoff: a safe integer ≥ 1. */
export function isValidCutoff(k: unknown): k is number {
  return typeof k === 'number' && Number.isSafeInteger(k) && k >= 1;
}

function unknown(name: string, why: string): HarnessError {
  return new HarnessError('MEASURE_UNKNOWN', `unknown measure ${JSON.stringify(name)}: ${why}`, {
    remedy: `use one of ${KNOWN_MEASURE_NAMES} (k an integer >= 1, e.g. ndcg@10)`,
  });
}

/**
 * Parses a canonical measure name such as `ndcg@10`, `hit_rate@5` or `r_precision`.
 * Names are case-sensitive and exact: no spaces, no aliases (`P@5`, `NDCG@10` are refused), `k` written as an
 * integer ≥ 1 without sign or leading zeros.
 * @throws HarnessError `MEASURE_UNKNOWN` naming the value and listing {@link KNOWN_MEASURE_NAMES}.
 */
export function parseMeasure(name: string): Measure {
  if (typeof name !== 'string') throw unknown(String(name), 'not a string');
  const at = name.indexOf('@');
  const family = at < 0 ? name : name.slice(0, at);
  if (!isFamily(family)) throw unknown(name, `no measure family ${JSON.stringify(family)}`);
  if (NO_CUTOFF.has(family)) {
    if (at >= 0) throw unknown(name, `${family} takes no cutoff (write ${family})`);
    return { family, k: null };
  }
  if (at < 0) throw unknown(name, `${family} needs a cutoff (write ${family}@10)`);
  const kText = name.slice(at + 1);
  const k = Number(kText);
  if (!K_PATTERN.test(kText) || !isValidCutoff(k)) {
    throw unknown(name, `cutoff ${JSON.stringify(kText)} is not an integer >= 1 written without leading zeros`);
  }
  return { family, k };
}

/**
 * Canonical name of a measure: `<family>@<k>`, or the bare family for `r_precision`.
 * @throws HarnessError `MEASURE_UNKNOWN` when the family is unknown or `k` does not fit it (missing, not an
 *   integer ≥ 1, or given to `r_precision`).
 */
export function formatMeasure(m: Measure): string {
  if (!isFamily(m.family)) throw unknown(String(m.family), `no measure family ${JSON.stringify(m.family)}`);
  if (NO_CUTOFF.has(m.family)) {
    if (m.k !== null) throw unknown(`${m.family}@${m.k}`, `${m.family} takes no cutoff (k must be null)`);
    return m.family;
  }
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

/** True when the family takes no cutoff (`r_precision`). */
export function takesNoCutoff(family: MeasureFamily): boolean {
  return NO_CUTOFF.has(family);
}
