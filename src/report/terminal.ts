/**
 * The short terminal summary printed after a run: at most 25 lines, plain text, no colour codes. Pure.
 */

import type { SweepResult } from '../types.js';
import type { Analysis } from './analyze.js';
import { fmt3, fmtCI, fmtP, fmtSigned, textTable } from './format.js';
import { isDagger, recommendationText } from './markdown.js';
import { fmtQueryMs } from './timing.js';
import { appendAll } from '../bounded.js';

/** Most tier-1 rows listed before "… and N more". */
export const TERMINAL_MAX_ROWS = 15;

/**
 * Renders the summary: a header (run, questions, configurations, the declared primary metric), a table of the tier-1
 * rows (at most {@link TERMINAL_MAX_ROWS}) with their intervals, difference to the best and Holm-adjusted p-values,
 * the recommendation and the number of warnings. Never more than 25 lines; ends with a newline.
 */
export function renderTerminal(result: SweepResult, analysis: Analysis): string {
  const pm = analysis.primaryMetric;
  const lines: string[] = [];
  const failed = analysis.failed.length;
  lines.push(
    `retrieval-sweep ${result.name}: ${analysis.questions} questions, ${result.configs.length} configurations${failed ? `, ${failed} failed` : ''}`,
  );
  const candidates = analysis.rows.filter((r) => r.candidate).length;
  lines.push(
    `Primary metric ${pm} (declared before the run). Tier 1 at k = ${analysis.primaryK ?? '—'}: ${analysis.tier1.length} of ${candidates} configurations` +
      `${analysis.undecided.length > 0 ? ` (${analysis.undecided.length} undecided at ${analysis.maxResamples} resamples)` : ''}.`,
  );
  if (analysis.best) {
    lines.push('');
    const comp = new Map(analysis.comparisons.map((c) => [c.id, c]));
    const shown = analysis.tier1.slice(0, TERMINAL_MAX_ROWS);
    const jm = analysis.unjudged?.metric;
    const table = [['configuration', pm, '95% CI', ...(jm ? [jm] : []), 'diff', 'p (Holm)', 'ms/query']];
    for (const id of shown) {
      const i = result.configs.findIndex((c) => c.config.id === id);
      const m = analysis.rows[i].metrics[pm];
      const c = comp.get(id);
      const j = jm ? result.configs[i].means[jm] : undefined;
      const judged = jm ? [typeof j === 'number' ? `${fmt3(j)}${j < analysis.unjudged!.warnBelow ? ' !' : ''}` : '—'] : [];
      // † as in report.md: a tier-1 row whose difference interval excludes 0 (the recommendation names it).
      table.push([
        id,
        fmt3(m.mean),
        fmtCI(m.low, m.high),
        ...judged,
        c ? `${fmtSigned(c.diff)}${isDagger(c) ? ' †' : ''}` : 'best',
        c ? fmtP(c.pHolm) : '',
        fmtQueryMs(result.configs[i]),
      ]);
    }
    appendAll(lines, textTable(table).map((l) => `  ${l}`));
    if (analysis.tier1.length > shown.length) lines.push(`  … and ${analysis.tier1.length - shown.length} more tier-1 rows (see report.md)`);
    lines.push('');
  }
  const rec = recommendationText(result, analysis);
  // The headline, then everything but the "declared before the run" line (the header says it).
  lines.push(rec[0], ...rec.slice(2));
  // A warning the lines above already print word for word (the unjudged one) is not repeated; the count says so.
  const above = lines.join('\n');
  const rest = analysis.warnings.filter((w) => !above.includes(w));
  if (rest.length > 0) {
    const all = analysis.warnings.length;
    const count = rest.length < all ? `${rest.length} more warning(s) (${all} in all)` : `${all} warning(s)`;
    lines.push(`${count}, first: ${rest[0]}${all > 1 ? ' (all in report.md)' : ''}`);
  }
  return `${lines.slice(0, 25).join('\n')}\n`;
}
