/**
 * The wording of the warnings that both the sweep (as events, shown in the terminal) and the report (report.md,
 * report.html) state, so that the two say the same thing in the same words, and the one list the report shows:
 * every warning of the run, then the statistics' own. Pure.
 */

import type { SweepResult } from '../types.js';
import { manifestValue } from './metrics.js';

/** Most question ids listed per reason in {@link excludedWarning}. */
export const EXCLUDED_IDS_SHOWN = 10;

/**
 * The warning for questions left out of every mean, grouped by their reason in first-seen order, with the reason as
 * the sweep found it: `no relevant label (no grade ≥ 2)` at the document level, `no chunk label with grade ≥ 2` at the
 * chunk level, `no evidence span with grade ≥ 2` at the evidence level. At most {@link EXCLUDED_IDS_SHOWN} ids per
 * reason, then `…`.
 *
 * Example: `3 question(s) left out of every mean: 2 × no evidence span with grade ≥ 2 (q1, q4); 1 × … (q9)`.
 * @param excluded `SweepResult.excluded`; an empty list gives null (nothing to warn about).
 */
export function excludedWarning(excluded: readonly { id: string; reason: string }[]): string | null {
  if (excluded.length === 0) return null;
  const byReason = new Map<string, string[]>();
  for (const e of excluded) {
    const l = byReason.get(e.reason);
    if (l) l.push(e.id);
    else byReason.set(e.reason, [e.id]);
  }
  const parts = [...byReason].map(
    ([reason, ids]) =>
      `${ids.length} × ${reason} (${ids.slice(0, EXCLUDED_IDS_SHOWN).join(', ')}${ids.length > EXCLUDED_IDS_SHOWN ? ', …' : ''})`,
  );
  return `${excluded.length} question(s) left out of every mean: ${parts.join('; ')}`;
}

/** The warning for failed rows: `2 configuration(s) failed; see "Failed configurations" in report.md`; null for 0. */
export function failedWarning(failed: number): string | null {
  return failed > 0 ? `${failed} configuration(s) failed; see "Failed configurations" in report.md` : null;
}

/**
 * The run's own warnings: `result.warnings` when present; else (a results folder written before that field existed)
 * `manifest.dataset.warnings` when it is a list of strings; else none.
 */
export function runWarnings(result: SweepResult): string[] {
  if (Array.isArray(result.warnings)) return [...result.warnings];
  const ds = manifestValue(result, ['dataset', 'warnings']);
  return Array.isArray(ds) ? ds.filter((w): w is string => typeof w === 'string') : [];
}

/**
 * Every warning the report lists: the run's ({@link runWarnings}, in order), then each statistics warning that is not
 * already there word for word.
 */
export function allWarnings(result: SweepResult, statistics: readonly string[]): string[] {
  const out = runWarnings(result);
  const seen = new Set(out);
  for (const w of statistics) if (!seen.has(w)) {
    out.push(w);
    seen.add(w);
  }
  return out;
}
