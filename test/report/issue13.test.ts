/**
 * Issue 13 §2–§3 and issue 14's fusion view: every warning where people read, in the words that are true; small
 * samples; adjusted difference intervals; segment winners; CSV formula safety; BEIR ids are no folders.
 * Each test is named after the defect it pins.
 */
import { describe, expect, it } from 'vitest';
import { analyze, holmRejections, signFlipHolm } from '../../src/report/analyze.js';
import { csvField } from '../../src/report/matrix.js';
import { recommendationText, renderMarkdown, segmentNotes } from '../../src/report/markdown.js';
import { renderReports } from '../../src/report/render.js';
import { allWarnings, excludedWarning, runWarnings } from '../../src/report/warnings.js';
import { bootstrapResampleMeans, percentileInterval, seededRandom } from '../../src/score/stats.js';
import { convex, question, row, spec, sweep } from './fixtures.js';

const KW = spec({ mode: 'keyword', k: 5 });
const SEM = spec({ mode: 'semantic', embedding: 'use-lite', k: 5 });
const HY = spec({ mode: 'hybrid', embedding: 'use-lite', k: 5 });

/** n questions q0..q(n−1), each with one relevant document `f<j % 2>/d<j>.md`. */
const questions = (n: number, tags: (j: number) => string[] = () => []) =>
  Array.from({ length: n }, (_, j) => question(`q${j}`, { [`f${j % 2}/d${j}.md`]: 1 }, tags(j)));

describe('warnings: every warning of the run is in report.md and report.html, not only in manifest.json', () => {
  const run = ['config: modes "semantic" without embeddings', 'dataset: 2 exact duplicate questions collapsed', 'projection: 3 spans not found'];
  const qs = questions(3);
  const result = sweep(qs, [row(KW, qs, { ndcg: [1, 0, 1] })], { warnings: run });
  const analysis = analyze(result, { resamples: 200 });

  it('the run warnings come first, in order, then the statistics warnings', () => {
    expect(analysis.warnings.slice(0, 3)).toEqual(run);
    expect(analysis.warnings[3]).toMatch(/^only 3 judged question\(s\), fewer than 30/);
  });

  it('report.md and report.html list each of them; the terminal counts all of them', () => {
    const out = renderReports(result, analysis);
    expect(out['report.md']).toContain(`## Warnings (${analysis.warnings.length})`);
    for (const w of run) {
      expect(out['report.md']).toContain(`- ${w.replace(/"/g, '"')}`);
      expect(out['report.html']).toContain(w.replace(/"/g, '&quot;'));
    }
    expect(out.terminal).toContain(`${analysis.warnings.length} warning(s), first: ${run[0]}`);
  });

  it('a results folder without result.warnings falls back to manifest.dataset.warnings', () => {
    const old = sweep(qs, [], { manifest: { dataset: { warnings: ['dataset: repeated label'] } } });
    expect(runWarnings(old)).toEqual(['dataset: repeated label']);
    expect(runWarnings(sweep(qs, []))).toEqual([]);
  });

  it('a statistics warning the run already gave word for word is listed once', () => {
    const w = excludedWarning([{ id: 'q9', reason: 'no relevant label (no grade ≥ 1)' }])!;
    expect(allWarnings({ ...result, warnings: [w] }, [w, 'other'])).toEqual([w, 'other']);
  });
});

describe("excluded questions: the evidence level says 'no evidence span with grade ≥ t', never 'no relevant label'", () => {
  it('groups by the reason the sweep found, in its words', () => {
    const text = excludedWarning([
      { id: 'q1', reason: 'no evidence span with grade ≥ 2' },
      { id: 'q4', reason: 'no evidence span with grade ≥ 2' },
    ]);
    // 2 questions, one reason: "2 × <reason> (q1, q4)".
    expect(text).toBe('2 question(s) left out of every mean: 2 × no evidence span with grade ≥ 2 (q1, q4)');
    expect(text).not.toContain('relevant label');
    expect(excludedWarning([])).toBeNull();
  });

  it('the report shows the same sentence', () => {
    const qs = questions(2);
    const result = sweep(qs, [row(KW, qs, { ndcg: [1, 0] })], { excluded: [{ id: 'q7', reason: 'no evidence span with grade ≥ 2' }] });
    expect(analyze(result, { resamples: 200 }).warnings).toContain(
      '1 question(s) left out of every mean: 1 × no evidence span with grade ≥ 2 (q7)',
    );
  });
});

describe('small samples: one judged question never makes tier 1 "a defensible choice"', () => {
  it('one question, rows at 0.000 against a best of 1.000: not enough evidence to choose', () => {
    const qs = questions(1);
    const result = sweep(qs, [row(KW, qs, { ndcg: [1] }), row(SEM, qs, { ndcg: [0] }), row(HY, qs, { ndcg: [0] })]);
    const a = analyze(result, { resamples: 200 });
    // n = 1: the exact sign-flip test has p = 2/2 = 1 for each, so both stay in tier 1.
    expect(a.tier1).toHaveLength(3);
    expect(a.evidence.enough).toBe(false);
    const text = recommendationText(result, a).join(' ');
    expect(text).toContain('Not enough evidence to choose a configuration: only 1 judged question(s), fewer than the 30');
    expect(text).not.toContain('defensible');
    expect(text).not.toMatch(/^Recommended/);
  });

  it('30 questions but a minimum detectable difference above a tenth of the range: still not enough', () => {
    // Alternating 1/0 against 0/1: every paired difference is ±1, sd = √(30/29), MDD = 2.8016 · 1.017 / √30 ≈ 0.52 > 0.1.
    const qs = questions(30);
    const a1 = qs.map((_, j) => (j % 2 === 0 ? 1 : 0));
    const b1 = qs.map((_, j) => (j % 2 === 0 ? 0 : 1));
    const result = sweep(qs, [row(KW, qs, { ndcg: a1 }), row(SEM, qs, { ndcg: b1 })]);
    const a = analyze(result, { resamples: 200, permutationResamples: 200 });
    expect(a.mdd!.value).toBeCloseTo((2.8015852 * Math.sqrt(30 / 29)) / Math.sqrt(30), 5);
    expect(a.evidence).toMatchObject({ enough: false });
    expect(a.evidence.reason).toContain("exceeds a tenth of the metric's range (0.100)");
    expect(recommendationText(result, a).join(' ')).not.toContain('defensible');
  });

  it('statistics.minQuestions is honoured, and with enough questions and a small MDD the sentence is a recommendation', () => {
    // 40 questions, the semantic row is 0.05 lower on every question but q0 (sd of differences small, MDD < 0.1).
    const qs = questions(40);
    const base = qs.map((_, j) => 0.5 + 0.01 * (j % 5));
    const result = sweep(qs, [row(KW, qs, { ndcg: base }), row(SEM, qs, { ndcg: base.map((v, j) => (j === 0 ? v : v - 0.05)) })]);
    const ok = analyze(result, { resamples: 200, permutationResamples: 200 });
    expect(ok.evidence.enough).toBe(true);
    expect(recommendationText(result, ok)[0]).toMatch(/^Recommended: none\.keyword\.k5/);
    const strict = analyze(result, { resamples: 200, permutationResamples: 200, minQuestions: 41 });
    expect(strict.evidence.enough).toBe(false);
    expect(strict.minQuestions).toBe(41);
    expect(() => analyze(result, { minQuestions: 0 })).toThrow(/minQuestions/);
  });
});

describe('paired difference intervals beside the Holm tiers are adjusted (Bonferroni 1 − α/m)', () => {
  const qs = questions(12);
  const best = qs.map((_, j) => (j % 3 === 0 ? 1 : 0.5));
  const rows = [
    row(KW, qs, { ndcg: best }),
    row(SEM, qs, { ndcg: best.map((v, j) => v - (j % 4 === 0 ? 0.3 : 0.1)) }),
    row(HY, qs, { ndcg: best.map((v, j) => v - (j % 2 === 0 ? 0.2 : 0)) }),
    row(spec({ mode: 'semantic', embedding: 'glove', k: 5 }), qs, { ndcg: best.map((v, j) => v - (j === 5 ? 0.4 : 0)) }),
  ];
  const result = sweep(qs, rows);
  const a = analyze(result, { resamples: 500 });

  it('the level is 1 − 0.05/3 for three comparisons, and each interval is that quantile pair of the paired resamples', () => {
    expect(a.comparisonLevel).toBeCloseTo(1 - 0.05 / 3, 12);
    for (const c of a.comparisons) {
      const d = Float64Array.from(qs, (_, j) => result.configs[c.index].perQuery[j].metrics['ndcg@5'] - best[j]);
      // The bootstrap draws the same question counts whatever the columns, so one column of differences reproduces it.
      // "Excludes 0" undecided at 500 resamples extends the same stream (score/sequential.ts): the interval is the
      // quantile pair of the first c.intervalResamples paired resamples.
      const { low, high } = percentileInterval(bootstrapResampleMeans(d, 12, 1, c.intervalResamples, 42), 1 - 0.05 / 3);
      expect(c.low).toBeCloseTo(low, 10);
      expect(c.high).toBeCloseTo(high, 10);
      expect(c.excludesZero).toBe(low > 0 || high < 0);
    }
  });

  it('the report names the level and says in one line how the intervals are adjusted', () => {
    const md = renderMarkdown(result, a);
    expect(md).toContain('diff 98.33% CI');
    expect(md).toContain('Bonferroni over the 3 comparison(s)');
  });

  it('a tier-1 row whose interval excludes 0 is never described as tied', () => {
    // Force the disagreement the test and the interval can have: tier 1 by the test, interval below 0.
    const forced = { ...a, comparisons: a.comparisons.map((c, i) => (i === 0 ? { ...c, tier: 1 as const, excludesZero: true, low: -0.2, high: -0.01 } : c)) };
    forced.tier1 = [a.best!.id, ...forced.comparisons.filter((c) => c.tier === 1).map((c) => c.id)];
    const text = recommendationText(result, forced).join(' ');
    expect(text).toContain(`excludes 0, so they are not tied with the best`);
    expect(text).toContain(forced.comparisons[0].id);
    expect(renderMarkdown(result, forced)).toContain('[−0.200, −0.010] †');
  });
});

describe('segments: every tag and folder names its own best configuration and tier 1', () => {
  // 40 questions: 20 paraphrase, 20 exact. Keyword: exact 1, paraphrase 0.459; hybrid: exact 0.8, paraphrase 0.629.
  // Overall keyword (20 + 9.18)/40 = 0.7295 beats hybrid (16 + 12.58)/40 = 0.7145, so keyword is recommended.
  const qs = questions(40, (j) => [j < 20 ? 'paraphrase' : 'exact']);
  const kw = qs.map((_, j) => (j < 20 ? 0.459 : 1));
  const hy = qs.map((_, j) => (j < 20 ? 0.629 : 0.8));
  const result = sweep(qs, [row(KW, qs, { ndcg: kw }), row(HY, qs, { ndcg: hy })]);
  const a = analyze(result, { resamples: 200, permutationResamples: 500 });

  it('the paraphrase segment: hybrid use-lite 0.629 is best, BM25 0.459 is not in its tier 1', () => {
    expect(a.best!.id).toBe(KW.id);
    const para = a.segments!.segments.find((s) => s.name === 'paraphrase')!;
    expect(para.value).toBeCloseTo(0.459, 10);
    expect(para.best).toEqual({ id: HY.id, value: expect.closeTo(0.629, 10) });
    // Twenty differences of −0.17: Hoeffding 2·exp(−(20·0.17)² / (2·20·0.17²)) = 2e^−10 < α/1, so BM25 is worse here.
    expect(para.tier1).toEqual([HY.id]);
    expect(para.recommendedInTier1).toBe(false);
    const exact = a.segments!.segments.find((s) => s.name === 'exact')!;
    expect(exact.best.id).toBe(KW.id);
  });

  it('the report says so in words', () => {
    const notes = segmentNotes(a);
    expect(notes.some((n) => n.includes(`tag paraphrase (20 question(s)): ${HY.id} scores 0.629 against 0.459 for ${KW.id}`))).toBe(true);
    expect(renderMarkdown(result, a)).toContain('best here');
  });

  it('BEIR ids containing "/" are not taken as folders', () => {
    const beir = sweep(qs, result.configs, { manifest: { dataset: { layout: 'beir' } } });
    const segs = analyze(beir, { resamples: 200, permutationResamples: 200 }).segments!.segments;
    expect(segs.filter((s) => s.kind === 'folder')).toEqual([]);
    // The folder layout keeps them: f0 and f1.
    expect(a.segments!.segments.filter((s) => s.kind === 'folder').map((s) => s.name)).toEqual(['f0', 'f1']);
  });
});

describe('fusion view (issue 14): the primary metric against alpha, with a sentence about beating both parents', () => {
  const qs = questions(20);
  const flat = (v: number) => qs.map(() => v);
  const h = (alpha: number) => spec({ mode: 'hybrid', embedding: 'use-lite', k: 5, fusion: convex(alpha) });
  const rows = [
    row(KW, qs, { ndcg: flat(0.4) }),
    row(SEM, qs, { ndcg: flat(0.5) }),
    row(h(0.25), qs, { ndcg: flat(0.45) }),
    row(h(0.5), qs, { ndcg: flat(0.7) }),
    row(h(0.75), qs, { ndcg: flat(0.5) }),
  ];
  const result = sweep(qs, rows);
  const a = analyze(result, { resamples: 200, permutationResamples: 999 });

  it('one group with both parents, points sorted by alpha, and only a0.5 beats both', () => {
    const g = a.fusion!.groups;
    expect(g).toHaveLength(1);
    expect(g[0].keyword!.id).toBe(KW.id);
    expect(g[0].semantic!.id).toBe(SEM.id);
    expect(g[0].points.map((p) => p.x)).toEqual([0.25, 0.5, 0.75]);
    // 3 points × 2 parents = 6 tests. a0.5: +0.3 and +0.2 on every question → p = 1/1000 each; Holm ×6 (first step) = 0.006.
    expect(a.fusion!.tests).toBe(6);
    const mid = g[0].points[1];
    expect(mid.vsKeyword!.diff).toBeCloseTo(0.3, 10);
    expect(mid.vsSemantic!.diff).toBeCloseTo(0.2, 10);
    expect(mid.vsKeyword!.pValue).toBeCloseTo(1 / 1000, 10);
    expect(mid.beatsBoth).toBe(true);
    // a0.75 ties the semantic parent on every question: p = 1.
    expect(g[0].points[2].vsSemantic!.pValue).toBe(1);
    expect(g[0].points.filter((p) => p.beatsBoth).map((p) => p.fusion)).toEqual(['cvx-mm-a0.5']);
    expect(g[0].sentence).toContain('1 of 3 hybrid setting(s) beat both parents');
  });

  it('report.md and report.html show the view; a sweep with one fusion setting does not', () => {
    const out = renderReports(result, a);
    expect(out['report.md']).toContain('## Fusion: ndcg@5 against the semantic weight');
    expect(out['report.html']).toContain('id="fusion"');
    const one = sweep(qs, rows.slice(0, 3));
    expect(analyze(one, { resamples: 200, permutationResamples: 200 }).fusion).toBeNull();
  });

  it('matrix.csv has the fusion and rerank columns', () => {
    const reranked = row(spec({ mode: 'keyword', k: 5, rerank: { label: 'bge', model: 'rerank:bge', depth: 20 } }), qs, { ndcg: flat(0.4) });
    const r2 = sweep(qs, [...rows, reranked]);
    const csv = renderReports(r2, analyze(r2, { resamples: 200, permutationResamples: 200 }))['matrix.csv'].split('\n');
    const head = csv[0].split(',');
    const at = (line: string, col: string) => line.split(',')[head.indexOf(col)];
    expect(at(csv[4], 'fusion')).toBe('cvx-mm-a0.5');
    expect(at(csv[4], 'retriever')).toBe('hybrid-cvx-mm-a0.5');
    expect(at(csv[6], 'rerank')).toBe('bge-d20');
    expect(at(csv[1], 'fusion')).toBe('');
  });
});

describe("CSV cells a spreadsheet would evaluate are written safely (OWASP's rule); numbers stay numbers", () => {
  it('text starting with = + - @ tab or CR gets a leading quote and is quoted', () => {
    expect(csvField('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
    expect(csvField('+1')).toBe(`"'+1"`);
    expect(csvField('-oops')).toBe(`"'-oops"`);
    expect(csvField('@SUM(A1)')).toBe(`"'@SUM(A1)"`);
    expect(csvField('\tx')).toBe(`"'\tx"`);
    expect(csvField('\rx')).toBe(`"'\rx"`);
    expect(csvField('a=b')).toBe('a=b');
  });

  it('a negative number is a number, not text', () => {
    expect(csvField(-0.25)).toBe('-0.25');
    expect(csvField(0)).toBe('0');
  });

  it('matrix.csv neutralises a formula in a configuration id and an error message', () => {
    const qs = questions(2);
    const evil = row(spec({ mode: 'keyword', k: 5, id: '=cmd|calc' }), qs, { ndcg: [1, 0] });
    const result = sweep(qs, [evil, { ...row(SEM, qs, { ndcg: [0, 0] }), status: 'failed' as const, error: '-1 files', means: {}, perQuery: [] }]);
    const csv = renderReports(result, analyze(result, { resamples: 200 }))['matrix.csv'];
    expect(csv).toContain(`"'=cmd|calc"`);
    expect(csv).toContain(`"'-1 files"`);
    expect(csv.split('\n').some((l) => l.startsWith('=') || l.includes(',=') || l.includes(',-1 files'))).toBe(false);
  });
});

describe('segment tiers: the shortcut decisions (Hoeffding bound, early stop) equal the full sign-flip + Holm decisions', () => {
  it('on 200 random families of 1 to 12 comparisons over 5 to 40 questions', () => {
    const rand = seededRandom(3);
    for (let t = 0; t < 200; t++) {
      const n = 5 + Math.floor(rand() * 36);
      const m = 1 + Math.floor(rand() * 12);
      const shift = (rand() - 0.5) * 0.6;
      const diffs = Array.from({ length: m }, () =>
        Float64Array.from({ length: n }, () => (rand() < 0.3 ? 0 : shift * rand() + (rand() - 0.5) * 0.5)),
      );
      // 999 resamples: 1/1000 < 0.05/12, so the Monte Carlo floor never blocks a rejection the bound proves.
      const full = signFlipHolm(diffs, n, 999, 11).pHolm.map((p) => p < 0.05);
      expect(holmRejections(diffs, n, 999, 11, 0.05)).toEqual(full);
    }
  });
});
