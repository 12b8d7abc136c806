/**
 * The report on unjudged documents (issue 20 §1): judged@k beside the primary metric, the warning and its two rules,
 * the bounds and whether the recommendation could change, and their place in matrix.json. Two questions, two rows,
 * values worked by hand.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/report/analyze.js';
import { renderMatrixJson } from '../../src/report/matrix.js';
import { renderMarkdown } from '../../src/report/markdown.js';
import { renderTerminal } from '../../src/report/terminal.js';
import { UNJUDGED_ADVICE } from '../../src/report/unjudged.js';
import { scoreRanking } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';
import type { ConfigResult, SweepResult } from '../../src/types.js';
import { question, spec, sweep } from './fixtures.js';

// q1 judged a (1) and n (0); q2 judged b (1)
const qs = [question('q1', { a: 1, n: 0 }), question('q2', { b: 1 })];
const measures = ['precision@2', 'judged@2'].map(parseMeasure);

/** A row scored by the real scorer from its rankings (one list per question). */
function scoredRow(mode: 'keyword' | 'semantic', lists: string[][]): ConfigResult {
  const perQuery = qs.map((q, j) => {
    const s = scoreRanking(lists[j], q.relevant, measures);
    return { qid: q.id, retrieved: lists[j].map((id) => ({ chunkId: id, docId: id, score: 1 })), firstRelevantRank: s.firstRelevantRank, metrics: s.values };
  });
  const means: Record<string, number> = {};
  for (const n of ['precision@2', 'judged@2']) means[n] = perQuery.reduce((a, d) => a + d.metrics[n], 0) / qs.length;
  return { config: spec({ mode, k: 2 }), status: 'ok', means, questions: 2, buildSeconds: 0, meanQueryMs: 1, perQuery };
}

// keyword: q1 [a, x], q2 [b, y]: precision@2 (1/2 + 1/2) / 2 = 1/2, judged@2 (1/2 + 1/2) / 2 = 1/2
// semantic: q1 [x, z], q2 [y, b]: precision@2 (0 + 1/2) / 2 = 1/4, judged@2 (0 + 1/2) / 2 = 1/4
const kw = scoredRow('keyword', [['a', 'x'], ['b', 'y']]);
const sem = scoredRow('semantic', [['x', 'z'], ['y', 'b']]);

function result(manifestConfig?: Record<string, unknown>): SweepResult {
  const r = sweep(qs, [kw, sem], { primaryMetric: 'precision@2' });
  if (manifestConfig) r.manifest = { ...r.manifest, config: manifestConfig };
  return r;
}

describe('the unjudged view of the report', () => {
  const a = analyze(result(), { seed: 1, resamples: 1000 });
  const u = a.unjudged!;

  it('both rows are tier 1 (2 questions cannot tell them apart); judged@2 is 1/2 and 1/4', () => {
    expect(a.tier1).toEqual([kw.config.id, sem.config.id]);
    expect(u.metric).toBe('judged@2');
    expect(u.rows.map((r) => [r.id, r.judged])).toEqual([
      [kw.config.id, (1 / 2 + 1 / 2) / 2],
      [sem.config.id, (0 + 1 / 2) / 2],
    ]);
  });

  it('warns on the row below 0.5 (semantic; keyword at exactly 0.5 is not below) and on the tier-1 spread 1/2 - 1/4 > 0.2', () => {
    expect(u.low).toEqual([sem.config.id]);
    expect(u.spread).toBeCloseTo(1 / 2 - 1 / 4, 10);
    expect(u.warning).toContain(`judged@2 is below 0.5 for 1 row(s) at k = 2: ${sem.config.id} (0.250)`);
    expect(u.warning).toContain("the tier-1 rows' judged@2 differ by 0.250, more than 0.2");
    expect(u.warning).toContain(UNJUDGED_ADVICE);
    expect(u.warning).toContain('retrieval-sweep pool');
    expect(a.warnings).toContain(u.warning);
  });

  it('bounds: every unjudged document relevant gives precision@2 = 1 for both rows, above keyword 1/2: the recommendation could change', () => {
    // keyword: q1 [a, x->1] 2/2, q2 [b, y->1] 2/2; semantic: q1 [x->1, z->1] 2/2, q2 [y->1, b] 2/2
    expect(u.rows.map((r) => [r.lower, r.upper])).toEqual([
      [1 / 2, (2 / 2 + 2 / 2) / 2],
      [1 / 4, (2 / 2 + 2 / 2) / 2],
    ]);
    expect(u.bounds!.couldChange).toBe(true);
    expect(u.bounds!.overtaking).toEqual([sem.config.id]);
    // Two questions are too few for a recommendation (statistics.minQuestions), so the sentence speaks of the top row.
    expect(a.evidence.enough).toBe(false);
    expect(u.bounds!.sentence).toContain(`so the top row (${kw.config.id}; no recommendation was made) could change`);
  });

  it('report.md has judged@2 beside precision@2 in the tier table, the warning and the bounds sentence; the terminal too', () => {
    const md = renderMarkdown(result(), a);
    expect(md).toContain('| configuration | retriever | chunking | precision@2 | 95% CI | judged@2 | diff vs best |');
    expect(md).toContain('0.250 ⚠');
    expect(md).toContain(UNJUDGED_ADVICE);
    expect(md).toContain('If every unjudged document in the top 2 were relevant (grade 1)');
    const term = renderTerminal(result(), a);
    expect(term).toContain('judged@2');
    expect(term).toContain(UNJUDGED_ADVICE);
    // Printed once: the warnings line leaves out the one the recommendation's lines already give.
    expect(term.split(u.warning!).length - 1).toBe(1);
    const others = a.warnings.filter((w) => w !== u.warning);
    expect(term).toContain(`${others.length} more warning(s) (${a.warnings.length} in all), first: ${others[0]}`);
  });

  it('matrix.json: unjudged_bounds per row at the primary k and the unjudged summary at the top', () => {
    const j = JSON.parse(renderMatrixJson(result(), a));
    expect(j.rows[0].unjudged_bounds).toEqual({ judged: 1 / 2, lower: 1 / 2, upper: 1 });
    expect(j.rows[1].unjudged_bounds).toEqual({ judged: 1 / 4, lower: 1 / 4, upper: 1 });
    expect(j.unjudged).toMatchObject({ judged_metric: 'judged@2', warn_below: 0.5, max_spread: 0.2, could_change: true, overtaking: [sem.config.id] });
  });

  it('the thresholds come from the run config (unjudged.warnBelow, unjudged.maxSpread): 0.2 and 0.3 silence both rules', () => {
    const quiet = analyze(result({ unjudged: { condensed: false, warnBelow: 0.2, maxSpread: 0.3 } }), { seed: 1, resamples: 1000 }).unjudged!;
    expect(quiet.low).toEqual([]);
    expect(quiet.warning).toBeNull();
    expect(quiet.bounds!.couldChange).toBe(true);
  });

  it('rows without judged@k (older results, level evidence) give no unjudged view and no new column', () => {
    const old = sweep(qs, [kw, sem].map((r) => ({ ...r, means: { 'precision@2': r.means['precision@2'] } })), { primaryMetric: 'precision@2' });
    const b = analyze(old, { seed: 1, resamples: 1000 });
    expect(b.unjudged).toBeNull();
    expect(renderMarkdown(old, b)).not.toContain('judged@2 |');
    expect(JSON.parse(renderMatrixJson(old, b))).not.toHaveProperty('unjudged');
  });
});
