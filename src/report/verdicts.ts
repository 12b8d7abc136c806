/**
 * Report sections for the verdicts of issue 22: the selection estimate corrected for the winner's curse and the
 * choice of k. Shared by report.md and report.html (each passes its own escaping). Pure.
 */

import type { Analysis } from './analyze.js';

/** How a section marks up configuration ids and escapes free text (Markdown or HTML). */
export interface SectionStyle {
  id: (configId: string) => string;
  text: (plain: string) => string;
}

const f3 = (x: number | null | undefined): string => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(3) : '—');
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`;

/**
 * The selection paragraph: in-sample best, cross-validated estimate with its interval, the optimism and the fold
 * choices. Empty when the analysis has no selection estimate.
 */
export function selectionParagraph(analysis: Analysis, style: SectionStyle): string[] {
  const s = analysis.selection;
  if (!s) return [];
  const pm = style.text(analysis.primaryMetric);
  const level = `${Math.round(analysis.level * 100)}%`;
  const choices = s.choices.map((c) => `${style.id(c.id)} in ${c.folds} of ${s.folds}`).join(', ');
  return [
    `The best row's ${pm}, ${f3(s.inSample.mean)} (${style.id(s.inSample.id)}), is measured on the same questions that chose it, so it is biased upwards ` +
      `(the winner's curse). Cross-validated over ${s.folds} folds of the questions${s.stratified ? ' (stratified by tag)' : ''}, ` +
      `"pick the highest ${pm} among the ${analysis.comparisons.length + 1} candidates, then use it" scores ${f3(s.estimate.mean)} ` +
      `(${level} CI [${f3(s.estimate.low)}, ${f3(s.estimate.high)}], over held-out questions, given the fold choices): optimism ${f3(s.optimism)}. ` +
      `Chosen on the training folds: ${choices}. docs/statistics.md explains the estimate.`,
  ];
}

/**
 * The advice the k curves share, said once: one line per distinct advice text, naming the configurations it applies
 * to ("For 5 of 6 configurations (`a`, `b`, …): every smaller k misses …"). Empty when no curve has advice.
 */
export function kCurveAdvice(analysis: Analysis, style: SectionStyle): string[] {
  const groups = new Map<string, string[]>();
  for (const c of analysis.kCurves) {
    if (c.advice === null) continue;
    const ids = groups.get(c.advice) ?? [];
    ids.push(c.configId);
    groups.set(c.advice, ids);
  }
  const n = analysis.kCurves.length;
  return [...groups].map(([advice, ids]) => {
    const who = ids.length === n ? (n === 1 ? 'For this configuration' : `For all ${n} configurations`) : `For ${ids.length} of ${n} configurations (${ids.map(style.id).join(', ')})`;
    return `${who}: ${style.text(advice)}`;
  });
}

/** One row per k of each curve: k, recall@k with CI, hit_rate@k with CI, recall difference vs kmax with CI, p (Holm), verdict. */
export function kCurveRows(analysis: Analysis, style: SectionStyle): { configId: string; sentence: string; header: string[]; rows: string[][] }[] {
  const ci = (iv: { low: number | null; high: number | null } | null): string => (iv && iv.low !== null ? `[${f3(iv.low)}, ${f3(iv.high)}]` : '—');
  return analysis.kCurves.map((c) => ({
    configId: c.configId,
    // The figures only: the advice they share is said once (kCurveAdvice).
    sentence: style.text(c.figures),
    header: ['k', 'recall@k', `${Math.round(analysis.level * 100)}% CI`, 'hit_rate@k', `${Math.round(analysis.level * 100)}% CI`, `recall − recall@${c.maxK}`, 'CI', 'p (Holm)', `vs k = ${c.maxK}`],
    rows: c.points.map((p) => [
      String(p.k),
      f3(p.recall?.mean),
      ci(p.recall),
      f3(p.hitRate?.mean),
      ci(p.hitRate),
      p.vsMax ? signed(p.vsMax.diff) : '',
      p.vsMax ? `[${f3(p.vsMax.low)}, ${f3(p.vsMax.high)}]` : '',
      p.vsMax ? (p.vsMax.pHolm < 0.001 ? '<0.001' : p.vsMax.pHolm.toFixed(3)) : '',
      p.vsMax ? (!p.vsMax.decided ? `undecided at ${p.vsMax.resamples} resamples` : p.vsMax.tied ? 'tied' : 'less') : p.k === c.maxK ? 'largest k' : '',
    ]),
  }));
}
