import { describe, expect, it } from 'vitest';
import { analyze, cutoffSweep, withStatistics } from '../../src/report/analyze.js';
import { bootstrapCI, normalQuantile } from '../../src/score/stats.js';
import { failedRow, question, row, spec, sweep } from './fixtures.js';

/** Sample standard deviation, written out for the hand arithmetic. */
function sd(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

/** Ten questions; A is the best, B differs from A on two questions only, C is clearly worse. */
function tierFixture() {
  const qs = Array.from({ length: 10 }, (_, j) => question(`q${j}`, { [`d${j}.md`]: 1 }));
  const A = [1, 1, 1, 1, 1, 1, 1, 1, 0.5, 0.5]; // mean 9/10
  const B = [0.5, 1, 1, 1, 1, 1, 1, 1, 0.75, 0.5]; // mean 8.75/10
  const C = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]; // mean 0
  const rows = [
    row(spec({ chunkingKey: 'none', mode: 'keyword', k: 5 }), qs, { ndcg: A }),
    row(spec({ chunkingKey: 'cs256-ov32', mode: 'keyword', k: 5 }), qs, { ndcg: B }),
    row(spec({ chunkingKey: 'none', mode: 'semantic', embedding: 'm', k: 5 }), qs, { ndcg: C }),
    row(spec({ chunkingKey: 'none', mode: 'keyword', k: 10 }), qs, { ndcg: A.map((x) => x / 2) }),
    failedRow(spec({ chunkingKey: 'cs256-ov32', mode: 'semantic', embedding: 'm', k: 5 }), 'model could not be loaded'),
  ];
  return { qs, A, B, C, result: sweep(qs, rows, { primaryMetric: 'ndcg@5' }) };
}

describe('analyze: best, comparisons and tiers', () => {
  it('the best is the highest mean at the primary k; rows at other k are not candidates', () => {
    const { result } = tierFixture();
    const a = analyze(result);
    expect(a.primaryFamily).toBe('ndcg');
    expect(a.primaryK).toBe(5);
    expect(a.best?.id).toBe('none.keyword.k5');
    expect(a.best?.mean).toBeCloseTo(9 / 10, 10);
    expect(a.rows.map((r) => r.candidate)).toEqual([true, true, true, false, false]);
    expect(a.rows[3].tier).toBeUndefined();
    expect(a.rows[4].tier).toBeUndefined();
  });

  it('an equal row is tier 1 and a clearly worse row is tier 2 (exact sign-flip p, Holm over 2 comparisons)', () => {
    const { result } = tierFixture();
    const a = analyze(result);
    const b = a.comparisons.find((c) => c.id === 'cs256-ov32.keyword.k5')!;
    const c = a.comparisons.find((c) => c.id === 'none.semantic.m.k5')!;
    // B − A = [−0.5, 0 × 7, +0.25, 0]: every pattern of ±0.5 ±0.25 has |sum| ≥ 0.25 → p = 1.
    expect(b.diff).toBeCloseTo(-0.25 / 10, 10);
    expect(b.exact).toBe(true);
    expect(b.pValue).toBeCloseTo(1, 10);
    // C − A = [−1 × 8, −0.5, −0.5]: all ten non-zero, |sum| = 9 only for all-minus and all-plus → p = 2 / 2^10.
    expect(c.diff).toBeCloseTo(-9 / 10, 10);
    expect(c.pValue).toBeCloseTo(2 / 1024, 10);
    // Holm with m = 2: sorted p: 2/1024 × 2 = 4/1024; then max(4/1024, 1 × 1) = 1.
    expect(c.pHolm).toBeCloseTo(4 / 1024, 10);
    expect(b.pHolm).toBeCloseTo(1, 10);
    expect(b.tier).toBe(1);
    expect(c.tier).toBe(2);
    expect(a.tier1).toEqual(['none.keyword.k5', 'cs256-ov32.keyword.k5']);
    expect(a.rows[0].tier).toBe(1);
    expect(a.rows[1].tier).toBe(1);
    expect(a.rows[2].tier).toBe(2);
    // The paired interval of C − A lies inside [−1, −0.5], the range of its differences, and holds the mean −0.9.
    expect(c.low).toBeGreaterThanOrEqual(-1);
    expect(c.high).toBeLessThanOrEqual(-0.5);
    expect(c.low).toBeLessThanOrEqual(-0.9);
    expect(c.high).toBeGreaterThanOrEqual(-0.9);
  });

  it('Holm decides the tier: two rows with raw p = 2/64 < 0.05 stay tier 1 after the adjustment 2 × 2/64 = 0.0625', () => {
    const qs = Array.from({ length: 6 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
    const best = [1, 1, 1, 1, 1, 1];
    const worse = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]; // six differences of −0.5: exact p = 2 / 2^6
    const a = analyze(
      sweep(qs, [
        row(spec({ k: 5 }), qs, { ndcg: best }),
        row(spec({ k: 5, chunkingKey: 'cs128-ov0' }), qs, { ndcg: worse }),
        row(spec({ k: 5, chunkingKey: 'cs256-ov0' }), qs, { ndcg: worse }),
      ]),
    );
    for (const c of a.comparisons) {
      expect(c.pValue).toBeCloseTo(2 / 64, 10);
      // Sorted: 2/64 × 2 = 0.0625, then max(0.0625, 2/64 × 1) = 0.0625.
      expect(c.pHolm).toBeCloseTo(2 * (2 / 64), 10);
      expect(c.tier).toBe(1);
    }
    expect(a.tier1).toHaveLength(3);
  });

  it('ties on the primary metric go to the earlier grid row', () => {
    const qs = [question('q0', { a: 1 }), question('q1', { b: 1 })];
    const r1 = row(spec({ mode: 'keyword', k: 5, chunkingKey: 'cs256-ov32' }), qs, { ndcg: [1, 0] });
    const r2 = row(spec({ mode: 'keyword', k: 5 }), qs, { ndcg: [0, 1] });
    expect(analyze(sweep(qs, [r1, r2])).best?.id).toBe('cs256-ov32.keyword.k5');
    expect(analyze(sweep(qs, [r2, r1])).best?.id).toBe('none.keyword.k5');
  });

  it('every ok row and metric gets the bootstrap interval of its per-question values, same as bootstrapCI', () => {
    const { result, B } = tierFixture();
    const a = analyze(result, { seed: 7, resamples: 1500 });
    const iv = a.rows[1].metrics['ndcg@5'];
    const ref = bootstrapCI(B, { seed: 7, resamples: 1500 });
    expect(iv.mean).toBeCloseTo(8.75 / 10, 10);
    expect(iv.low).toBe(ref.low);
    expect(iv.high).toBe(ref.high);
    expect(Object.keys(a.rows[0].metrics).sort()).toEqual(
      ['hit_rate@5', 'recall@5', 'precision@5', 'mrr@5', 'ndcg@5', 'ndcg_exp@5', 'map@5'].sort(),
    );
    expect(a.rows[4].metrics).toEqual({});
  });

  it('same seed gives the same numbers; another seed moves the intervals', () => {
    const { result } = tierFixture();
    expect(analyze(result, { seed: 3 })).toEqual(analyze(result, { seed: 3 }));
    expect(analyze(result, { seed: 3 }).rows[1].metrics['ndcg@5']).not.toEqual(analyze(result, { seed: 4 }).rows[1].metrics['ndcg@5']);
  });

  it('fewer than 30 judged questions: a warning with the minimum detectable difference from the paired sds', () => {
    const { result, A, B, C } = tierFixture();
    const a = analyze(result);
    const sdB = sd(B.map((x, j) => x - A[j]));
    const sdC = sd(C.map((x, j) => x - A[j]));
    const rms = Math.sqrt((sdB * sdB + sdC * sdC) / 2); // root mean square of the two paired sds
    const expected = ((normalQuantile(0.975) + normalQuantile(0.8)) * rms) / Math.sqrt(10);
    expect(a.mdd?.diffSd).toBeCloseTo(rms, 10);
    expect(a.mdd?.value).toBeCloseTo(expected, 10);
    const w = a.warnings.find((x) => x.includes('fewer than 30'));
    expect(w).toBeDefined();
    expect(w).toContain(`${(expected * 100).toFixed(1)} points`);
  });

  it('the minimum detectable difference never collapses to 0 when most candidates tie the best', () => {
    // Best A; B and D equal A on every question (sd of differences 0); E differs. The median of the sds {0, 0, sdE}
    // is 0, which would claim any difference is detectable; the root mean square is sdE / sqrt(3).
    const qs = Array.from({ length: 10 }, (_, j) => question(`q${j}`, { [`d${j}.md`]: 1 }));
    const A = [1, 1, 1, 1, 1, 1, 1, 1, 0.5, 0.5];
    const E = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1];
    const result = sweep(
      qs,
      [
        row(spec({ chunkingKey: 'none', mode: 'keyword', k: 5 }), qs, { ndcg: A }),
        row(spec({ chunkingKey: 'cs128-ov0', mode: 'keyword', k: 5 }), qs, { ndcg: A }),
        row(spec({ chunkingKey: 'cs256-ov0', mode: 'keyword', k: 5 }), qs, { ndcg: A }),
        row(spec({ chunkingKey: 'cs512-ov0', mode: 'keyword', k: 5 }), qs, { ndcg: E }),
      ],
      { primaryMetric: 'ndcg@5' },
    );
    const a = analyze(result);
    const sdE = sd(E.map((x, j) => x - A[j]));
    expect(a.mdd!.diffSd).toBeCloseTo(sdE / Math.sqrt(3), 10);
    expect(a.mdd!.value).toBeCloseTo(((normalQuantile(0.975) + normalQuantile(0.8)) * (sdE / Math.sqrt(3))) / Math.sqrt(10), 10);
  });

  it('30 or more questions: no small-sample warning', () => {
    const qs = Array.from({ length: 30 }, (_, j) => question(`q${j}`, { [`d${j}`]: 1 }));
    const vals = qs.map((_, j) => (j % 3) / 2);
    const a = analyze(sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: vals })]));
    expect(a.warnings.some((w) => w.includes('fewer than 30'))).toBe(false);
  });

  it('failed rows are listed with their error and warned about', () => {
    const a = analyze(tierFixture().result);
    expect(a.failed).toEqual([{ id: 'cs256-ov32.semantic.m.k5', error: 'model could not be loaded' }]);
    expect(a.warnings.some((w) => w.includes('1 configuration(s) failed'))).toBe(true);
  });

  it('no row at the primary k: no recommendation and a warning naming the metric', () => {
    const qs = [question('q0', { a: 1 })];
    const a = analyze(sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [1] })], { primaryMetric: 'ndcg@10' }));
    expect(a.best).toBeNull();
    expect(a.tier1).toEqual([]);
    expect(a.warnings.some((w) => w.includes('ndcg@10'))).toBe(true);
  });

  it('questions left out of the means are reported with their reasons', () => {
    const qs = [question('q0', { a: 1 })];
    const a = analyze(
      sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [1] })], { excluded: [{ id: 'q9', reason: 'no relevant label' }] }),
    );
    expect(a.warnings.some((w) => w.includes('1 question(s) left out') && w.includes('no relevant label'))).toBe(true);
  });

  it('questions no configuration found are listed (firstRelevantRank null in every ok row)', () => {
    const qs = [question('q0', { a: 1 }), question('q1', { b: 1 }), question('q2', { c: 1 })];
    const r1 = row(spec({ k: 5 }), qs, { ndcg: [1, 0, 0] }, { firstRelevant: [1, null, null] });
    const r2 = row(spec({ k: 5, chunkingKey: 'cs256-ov32' }), qs, { ndcg: [0, 0.5, 0] }, { firstRelevant: [null, 3, null] });
    expect(analyze(sweep(qs, [r1, r2])).missedByAll).toEqual(['q2']);
  });

  it('withStatistics fills ci and tier on a copy and leaves the input unchanged', () => {
    const { result } = tierFixture();
    const before = structuredClone(result);
    const a = analyze(result);
    const out = withStatistics(result, a);
    expect(result).toEqual(before);
    expect(out).not.toBe(result);
    expect(out.configs[0].tier).toBe(1);
    expect(out.configs[2].tier).toBe(2);
    expect(out.configs[3].tier).toBeUndefined();
    expect(out.configs[0].ci?.['ndcg@5']).toEqual([a.rows[0].metrics['ndcg@5'].low, a.rows[0].metrics['ndcg@5'].high]);
    expect(out.configs[4].ci).toBeUndefined();
  });
});

describe('analyze: segments of the best configuration', () => {
  it('tags and top-level folders: value, points and percent against the overall value (0.80 → 0.60 is −20 points, −25%)', () => {
    const qs = [
      question('q1', { 'faq/x.md': 1, 'old/x.md': 0 }, ['a']),
      question('q2', { 'guides/y.md': 2, 'faq/y.md': 1 }, ['b']),
      question('q3', { 'guides/z.md': 1 }, ['b']),
      question('q4', { 'readme.md': 1 }, []),
    ];
    const result = sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [1, 0.6, 0.6, 1] })]);
    const seg = analyze(result).segments!;
    // Overall (1 + 0.6 + 0.6 + 1) / 4 = 0.8.
    expect(seg.overall).toBeCloseTo(0.8, 10);
    const get = (kind: string, name: string) => seg.segments.find((s) => s.kind === kind && s.name === name);
    // Tag b: (0.6 + 0.6) / 2 = 0.6 → (0.6 − 0.8) × 100 = −20 points, (0.6 − 0.8) / 0.8 = −25%.
    expect(get('tag', 'b')?.value).toBeCloseTo(0.6, 10);
    expect(get('tag', 'b')?.questions).toBe(2);
    expect(get('tag', 'b')?.diffPoints).toBeCloseTo(-20, 10);
    expect(get('tag', 'b')?.diffPercent).toBeCloseTo(-25, 10);
    // Tag a: 1.0 → +20 points, +25%; untagged q4: 1.0.
    expect(get('tag', 'a')?.diffPoints).toBeCloseTo(20, 10);
    expect(get('tag', 'a')?.diffPercent).toBeCloseTo(25, 10);
    expect(get('tag', '(untagged)')?.questions).toBe(1);
    // Folder faq: q1 and q2 (q2 has a relevant doc under faq/ too) → (1 + 0.6) / 2 = 0.8 → 0 points.
    expect(get('folder', 'faq')?.questions).toBe(2);
    expect(get('folder', 'faq')?.value).toBeCloseTo(0.8, 10);
    expect(get('folder', 'faq')?.diffPoints).toBeCloseTo(0, 10);
    // Folder guides: q2, q3 → 0.6; (root): q4 → 1.0.
    expect(get('folder', 'guides')?.value).toBeCloseTo(0.6, 10);
    expect(get('folder', '(root)')?.value).toBeCloseTo(1, 10);
    // A grade-0 document does not make q1 part of folder old.
    expect(get('folder', 'old')).toBeUndefined();
    expect(seg.segments.map((s) => `${s.kind}:${s.name}`)).toEqual([
      'tag:a',
      'tag:b',
      'tag:(untagged)',
      'folder:faq',
      'folder:guides',
      'folder:(root)',
    ]);
  });

  it('percent is null when the overall value is 0', () => {
    const qs = [question('q1', { 'a/x': 1 }, ['t'])];
    const seg = analyze(sweep(qs, [row(spec({ k: 5 }), qs, { ndcg: [0] })])).segments!;
    expect(seg.segments[0].diffPercent).toBeNull();
  });
});

describe('cutoffSweep: precision and recall of "score ≥ threshold"', () => {
  // q1: d1 0.9 (relevant), d2 0.8, d1 0.72 (second chunk of d1), d3 0.6 (relevant); q2: d4 0.85, d5 0.5 (relevant).
  const list = [
    { qid: 'q1', docId: 'd1', score: 0.9, relevant: true },
    { qid: 'q1', docId: 'd2', score: 0.8, relevant: false },
    { qid: 'q1', docId: 'd1', score: 0.72, relevant: true },
    { qid: 'q1', docId: 'd3', score: 0.6, relevant: true },
    { qid: 'q2', docId: 'd4', score: 0.85, relevant: false },
    { qid: 'q2', docId: 'd5', score: 0.5, relevant: true },
  ];

  it('the F1-best threshold over the distinct scores, by hand', () => {
    const s = cutoffSweep(list, { fixed: 0.75, bins: 2 })!;
    // Recall denominator: relevant (question, doc) pairs retrieved = (q1,d1), (q1,d3), (q2,d5) = 3.
    expect(s.relevantDocs).toBe(3);
    expect(s.results).toBe(6);
    expect(s.relevantResults).toBe(4);
    // t = 0.9: P 1/1, R 1/3, F1 = 2·(1/3)/(4/3) = 0.5.  t = 0.6: P 3/5, R 2/3, F1 = 2·0.4/(0.6 + 2/3) ≈ 0.632.
    // t = 0.5: P 4/6, R 3/3, F1 = 2·(2/3)/(5/3) = 0.8 → the best.
    expect(s.best.threshold).toBeCloseTo(0.5, 10);
    expect(s.best.precision).toBeCloseTo(4 / 6, 10);
    expect(s.best.recall).toBeCloseTo(1, 10);
    expect(s.best.f1).toBeCloseTo((2 * (4 / 6) * 1) / (4 / 6 + 1), 10);
  });

  it('a fixed 0.75 cutoff keeps 0.9, 0.85, 0.8: P 1/3, R 1/3; its cost against the best', () => {
    const s = cutoffSweep(list, { fixed: 0.75, bins: 2 })!;
    expect(s.fixed.kept).toBe(3);
    expect(s.fixed.precision).toBeCloseTo(1 / 3, 10);
    expect(s.fixed.recall).toBeCloseTo(1 / 3, 10);
    expect(s.fixed.recallChange).toBeCloseTo(1 / 3 - 1, 10);
    expect(s.fixed.precisionChange).toBeCloseTo(1 / 3 - 4 / 6, 10);
  });

  it('a second chunk of an already-kept relevant document adds precision but not recall (t = 0.72)', () => {
    const s = cutoffSweep(list, { fixed: 0.72 })!;
    // Kept: 0.9 R, 0.85 N, 0.8 N, 0.72 R → P = 2/4; recall still only d1 of q1 → 1/3.
    expect(s.fixed.precision).toBeCloseTo(2 / 4, 10);
    expect(s.fixed.recall).toBeCloseTo(1 / 3, 10);
  });

  it('histogram bins split min..max evenly: [0.5, 0.7) holds 0.5 and 0.6; [0.7, 0.9] the other four', () => {
    const s = cutoffSweep(list, { bins: 2 })!;
    expect(s.histogram.edges[0]).toBeCloseTo(0.5, 10);
    expect(s.histogram.edges[1]).toBeCloseTo(0.7, 10);
    expect(s.histogram.edges[2]).toBeCloseTo(0.9, 10);
    expect(s.histogram.relevant).toEqual([2, 2]);
    expect(s.histogram.nonRelevant).toEqual([0, 2]);
  });

  it('the curve runs from the lowest to the highest score and recall never rises with the threshold', () => {
    const s = cutoffSweep(list)!;
    expect(s.curve).toHaveLength(101);
    expect(s.curve[0].threshold).toBeCloseTo(0.5, 10);
    expect(s.curve[100].threshold).toBeCloseTo(0.9, 10);
    for (let i = 1; i < s.curve.length; i++) expect(s.curve[i].recall!).toBeLessThanOrEqual(s.curve[i - 1].recall!);
  });

  it('a fixed cutoff above every score keeps nothing: precision null, recall 0', () => {
    const s = cutoffSweep(list, { fixed: 0.95 })!;
    expect(s.fixed.kept).toBe(0);
    expect(s.fixed.precision).toBeNull();
    expect(s.fixed.recall).toBeCloseTo(0, 10);
  });

  it('empty input gives null', () => {
    expect(cutoffSweep([])).toBeNull();
  });
});

describe('analyze: cutoffs and model comparison over semantic rows', () => {
  const qs = [question('q0', { good: 1 }), question('q1', { good2: 1 })];
  const hits = (scores: number[], docs: string[]) => scores.map((s, i) => ({ chunkId: `${docs[i]}#0`, docId: docs[i], score: s }));

  function modelFixture() {
    // Model "hi": high cosine scores (top-1 0.9 and 0.8) but poor ranking (ndcg 0.3).
    // Model "lo": low cosine scores (top-1 0.5 and 0.4) but good ranking (ndcg 0.8).
    const hiRet = [hits([0.9, 0.85], ['bad', 'good']), hits([0.8, 0.7], ['bad', 'good2'])];
    const loRet = [hits([0.5, 0.3], ['good', 'bad']), hits([0.4, 0.2], ['good2', 'bad'])];
    return sweep(qs, [
      row(spec({ mode: 'semantic', embedding: 'hi', k: 2 }), qs, { ndcg: [0.3, 0.3] }, { retrieved: hiRet }),
      row(spec({ mode: 'semantic', embedding: 'lo', k: 2 }), qs, { ndcg: [0.8, 0.8] }, { retrieved: loRet }),
      row(spec({ mode: 'semantic', embedding: 'lo', k: 2, chunkingKey: 'cs256-ov32' }), qs, { ndcg: [0.1, 0.1] }, { retrieved: loRet }),
    ], { primaryMetric: 'ndcg@2' });
  }

  it('states that the higher-cosine model ranks worse', () => {
    const a = analyze(modelFixture());
    const hi = a.models.rows.find((r) => r.model === 'hi')!;
    const lo = a.models.rows.find((r) => r.model === 'lo')!;
    expect(hi.meanTop1Cosine).toBeCloseTo((0.9 + 0.8) / 2, 10);
    expect(lo.meanTop1Cosine).toBeCloseTo((0.5 + 0.4) / 2, 10);
    expect(hi.ndcg?.mean).toBeCloseTo(0.3, 10);
    expect(lo.configId).toBe('none.semantic.lo.k2');
    expect(a.models.notes).toHaveLength(1);
    expect(a.models.notes[0]).toMatch(/^hi gives higher cosine scores than lo .* but ranks worse/);
  });

  it('no note when the higher-cosine model also ranks better', () => {
    const r = modelFixture();
    r.configs[0] = row(r.configs[0].config, qs, { ndcg: [0.95, 0.95] }, { retrieved: r.configs[0].perQuery.map((d) => d.retrieved) });
    expect(analyze(r).models.notes).toEqual([]);
  });

  it('cutoffs use the model row with the largest k at the chunking that is best on the primary metric', () => {
    const r = modelFixture();
    const loRet = r.configs[1].perQuery.map((d) => d.retrieved);
    r.configs.push(
      row(spec({ mode: 'semantic', embedding: 'lo', k: 5 }), qs, { ndcg: [0.5, 0.5] }, { retrieved: loRet }),
      row(spec({ mode: 'semantic', embedding: 'lo', k: 5, chunkingKey: 'cs256-ov32' }), qs, { ndcg: [0.9, 0.9] }, { retrieved: loRet }),
    );
    const a = analyze(r);
    const lo = a.cutoffs.find((c) => c.model === 'lo')!;
    // At the primary k = 2, chunking none (0.8) beats cs256-ov32 (0.1); its largest k is 5.
    expect(lo.configId).toBe('none.semantic.lo.k5');
    expect(lo.k).toBe(5);
    // Scores 0.5 (good), 0.3 (bad), 0.4 (good2), 0.2 (bad): the F1-best keeps 0.5 and 0.4: P 2/2, R 2/2.
    expect(lo.best.threshold).toBeCloseTo(0.4, 10);
    expect(lo.best.f1).toBeCloseTo(1, 10);
    expect(lo.fixed.kept).toBe(0);
  });
});
