/**
 * What the report says about unjudged documents (issue 20 §1): judged@k beside the primary metric, a warning when the
 * rows at the primary k rest on few labels or on unequal shares of labels, and bounds on the primary metric from the
 * unjudged documents of each row's top k. Pure.
 */
import { parseMeasure, type Measure } from '../score/measures.js';
import { planMeasures } from '../score/evaluate.js';
import { unjudgedBounds } from '../score/bounds.js';
import type { SweepResult } from '../types.js';
import { manifestValue, relevanceThreshold } from './metrics.js';

/** Defaults of the config key `unjudged` (src/config/schema.ts). */
export const UNJUDGED_DEFAULTS = Object.freeze({ warnBelow: 0.5, maxSpread: 0.2 });

/** The sentence the warning ends with (issue 20). */
export const UNJUDGED_ADVICE =
  "these rows' scores count unjudged documents as not relevant; label the pool (below) before choosing between them";

/** One candidate row (at the primary k) as the unjudged view sees it. */
export interface UnjudgedRow {
  index: number;
  id: string;
  /** The row's judged@k (share of its top k with a label of any grade), in [0, 1]. */
  judged: number;
  tier: 1 | 2 | null;
  /** The primary metric as scored (unjudged = not relevant): the lower bound. */
  lower: number;
  /**
   * Mean over questions of the primary metric if every unjudged document of the top k were relevant at the threshold
   * grade (per question never below the usual value; src/score/bounds.ts); null when it cannot be computed (level
   * evidence, a condensed primary metric, or a row without per-question rankings).
   */
  upper: number | null;
}

/** The unjudged view of the rows at the primary k. */
export interface UnjudgedAnalysis {
  /** `judged@<primary k>`. */
  metric: string;
  warnBelow: number;
  maxSpread: number;
  /** Candidate rows with judged@k, grid order. */
  rows: UnjudgedRow[];
  /** Ids of candidate rows with judged@k below `warnBelow`. */
  low: string[];
  /** max − min judged@k over the tier-1 rows; null with fewer than two tier-1 rows. */
  spread: number | null;
  /** The warning, or null when neither rule fires. */
  warning: string | null;
  /**
   * Whether the recommendation could change between the bounds: true when some other candidate's upper bound exceeds
   * the recommended row's lower bound (its usual value); `overtaking` names those rows. Null without bounds.
   */
  bounds: { couldChange: boolean; overtaking: string[]; sentence: string } | null;
}

/**
 * The unjudged view, or null when no candidate row has judged@k at the primary k (level evidence, results written
 * before judged@k existed, no primary k). Thresholds: `unjudged.warnBelow` and `unjudged.maxSpread` of the run's
 * resolved config (manifest), defaults {@link UNJUDGED_DEFAULTS}.
 * @param candidates rows at the primary k with the primary metric, as analyze() found them (index into
 *   `result.configs`, tier or null).
 * @param best index of the recommended row (the top row when there is not enough evidence), or null.
 * @param recommended false when the report makes no recommendation (not enough evidence): the bounds sentence then
 *   speaks of the top row; default true.
 */
export function unjudgedAnalysis(
  result: SweepResult,
  candidates: readonly { index: number; tier: 1 | 2 | null }[],
  best: number | null,
  recommended = true,
): UnjudgedAnalysis | null {
  let primary: Measure;
  try {
    primary = parseMeasure(result.primaryMetric);
  } catch {
    return null;
  }
  if (primary.k === null) return null;
  const metric = `judged@${primary.k}`;
  const num = (path: string[], d: number): number => {
    const v = manifestValue(result, ['config', 'unjudged', ...path]);
    return typeof v === 'number' && Number.isFinite(v) ? v : d;
  };
  const warnBelow = num(['warnBelow'], UNJUDGED_DEFAULTS.warnBelow);
  const maxSpread = num(['maxSpread'], UNJUDGED_DEFAULTS.maxSpread);
  const threshold = relevanceThreshold(result);
  const byId = new Map(result.questions.map((q) => [q.id, q]));
  const canBound =
    (result.level === 'document' || result.level === 'chunk') && primary.condensed !== true && primary.family !== 'judged' && primary.family !== 'bpref';
  const plan = canBound ? planMeasures([primary]) : null;

  const rows: UnjudgedRow[] = [];
  for (const c of candidates) {
    const row = result.configs[c.index];
    const judged = row.means[metric];
    const lower = row.means[result.primaryMetric];
    if (typeof judged !== 'number' || typeof lower !== 'number') continue;
    let upper: number | null = null;
    if (plan !== null && row.perQuery.length > 0) {
      let sum = 0;
      let n = 0;
      for (const d of row.perQuery) {
        const q = byId.get(d.qid);
        if (!q) continue;
        const ids = result.level === 'document' ? d.retrieved.map((r) => r.docId) : d.retrieved.map((r) => r.chunkId);
        const labels = result.level === 'document' ? q.relevant : (q.chunkLabels ?? {});
        sum += unjudgedBounds(ids.slice(0, primary.k), labels, primary, threshold, plan).upper;
        n++;
      }
      upper = n > 0 ? sum / n : null;
    }
    rows.push({ index: c.index, id: row.config.id, judged, tier: c.tier, lower, upper });
  }
  if (rows.length === 0) return null;

  const low = rows.filter((r) => r.judged < warnBelow).map((r) => r.id);
  const tier1 = rows.filter((r) => r.tier === 1);
  const spread = tier1.length >= 2 ? Math.max(...tier1.map((r) => r.judged)) - Math.min(...tier1.map((r) => r.judged)) : null;
  const wide = spread !== null && spread > maxSpread;
  const f3 = (x: number) => x.toFixed(3);
  const list = (ids: string[]) => {
    const shown = ids.slice(0, 5).map((id) => `${id} (${f3(rows.find((r) => r.id === id)!.judged)})`);
    return `${shown.join(', ')}${ids.length > 5 ? `, … and ${ids.length - 5} more` : ''}`;
  };
  const parts: string[] = [];
  if (low.length > 0) parts.push(`${metric} is below ${warnBelow} for ${low.length} row(s) at k = ${primary.k}: ${list(low)}`);
  if (wide) parts.push(`the tier-1 rows' ${metric} differ by ${f3(spread!)}, more than ${maxSpread}`);
  const warning =
    parts.length === 0
      ? null
      : `${parts.join('; and ')}: ${UNJUDGED_ADVICE} (\`retrieval-sweep pool <this results folder> --depth ${primary.k}\` lists the unjudged pairs of tier 1 and of the rows that could overtake it; docs/labelling.md).`;

  let bounds: UnjudgedAnalysis['bounds'] = null;
  const bestRow = best === null ? undefined : rows.find((r) => r.index === best);
  if (bestRow && rows.every((r) => r.upper !== null)) {
    const overtaking = rows.filter((r) => r.index !== best && (r.upper as number) > bestRow.lower).map((r) => r.id);
    const couldChange = overtaking.length > 0;
    // Without a recommendation (not enough evidence) the bounds speak of the top row, not of a recommendation.
    const subject = recommended ? 'the recommendation' : `the top row (${bestRow.id}; no recommendation was made)`;
    const shown = (tier1.length > 0 ? tier1 : [bestRow]).slice(0, 5);
    const ranges = shown.map((r) => `${r.id} ${f3(r.lower)} to ${f3(r.upper as number)}`).join(', ');
    const sentence =
      `If every unjudged document in the top ${primary.k} were relevant (grade ${threshold}), ${result.primaryMetric} would rise at most to: ${ranges}` +
      (tier1.length > shown.length ? ` (and ${tier1.length - shown.length} more tier-1 rows)` : '') +
      (couldChange
        ? `; so ${subject} could change: ${overtaking
            .slice(0, 5)
            .map((id) => `${id} (up to ${f3(rows.find((r) => r.id === id)!.upper as number)})`)
            .join(', ')}${overtaking.length > 5 ? ', …' : ''} could exceed ${bestRow.id}'s ${f3(bestRow.lower)}.`
        : `; ${subject} could not change: no other row's upper bound exceeds ${bestRow.id}'s ${f3(bestRow.lower)}.`);
    bounds = { couldChange, overtaking, sentence };
  }
  return { metric, warnBelow, maxSpread, rows, low, spread, warning, bounds };
}
