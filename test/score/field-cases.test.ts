/**
 * The metric cases from ../shared/cases/field-cases.json (M01, M03, M04, M06, M07, M11) and M10. Inputs are read
 * from the file; each expected value is checked twice: against the arithmetic written here (10 decimals) and
 * against the value printed in the file (6 decimals, the precision it was written at).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { evaluate, scoreRanking, type Qrels, type Run } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const file = path.resolve(repoRoot, '../shared/cases/field-cases.json');

type Any = any;
const cases: Any[] = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Any[]) : [];
function fieldCase(prefix: string): Any {
  const c = cases.find((x) => String(x.id).startsWith(prefix));
  if (c === undefined) throw new Error(`field case ${prefix} not found in ${file}`);
  return c;
}
const ms = (...names: string[]) => names.map(parseMeasure);
const labelsOf = (list: string[]) => Object.fromEntries(list.map((id) => [id, 1]));
const L = Math.log2;

describe.skipIf(!existsSync(file))('field cases (../shared/cases/field-cases.json)', () => {
  it('lists every metric case this suite covers', () => {
    const metricIds = cases.filter((c) => c.kind === 'metric').map((c) => String(c.id).slice(0, 3));
    expect(metricIds.sort()).toEqual(['M01', 'M03', 'M04', 'M06', 'M07', 'M11']);
  });

  it('M01 ndcg ideal DCG comes from every labelled document, not from the retrieved list', () => {
    const c = fieldCase('M01');
    const { k, labels, ranking } = c.input;
    const s = scoreRanking(ranking, labels, ms(`ndcg@${k}`, `precision@${k}`, `recall@${k}`, `mrr@${k}`, `hit_rate@${k}`));
    const ndcg = 1 / L(2) / (1 / L(2) + 1 / L(3));
    expect(s.values['ndcg@4']).toBeCloseTo(ndcg, 10);
    expect(s.values['precision@4']).toBeCloseTo(1 / 4, 10);
    expect(s.values['recall@4']).toBeCloseTo(1 / 2, 10);
    expect(s.values['mrr@4']).toBeCloseTo(1, 10);
    expect(s.values['hit_rate@4']).toBeCloseTo(1, 10);
    const e = c.expected;
    expect(s.values['ndcg@4']).toBeCloseTo(e['ndcg@4'], 6);
    expect(s.values['precision@4']).toBeCloseTo(e['p@4'], 6);
    expect(s.values['recall@4']).toBeCloseTo(e['recall@4'], 6);
    expect(s.values['mrr@4']).toBeCloseTo(e.rr, 6);
    expect(s.values['hit_rate@4']).toBeCloseTo(e['hit@4'], 6);
  });

  it('M03 graded labels: linear gain (ndcg) and exponential gain (ndcg_exp) differ', () => {
    const c = fieldCase('M03');
    const { k, labels, ranking } = c.input;
    const s = scoreRanking(ranking, labels, ms(`ndcg@${k}`, `ndcg_exp@${k}`, `precision@${k}`, `recall@${k}`, `mrr@${k}`));
    // ranking B(1), C(0), A(2); ideal A(2), B(1); C has grade 0 and is left out of the ideal and of P/R
    const linear = (1 / L(2) + 2 / L(4)) / (2 / L(2) + 1 / L(3));
    const exponential = ((2 ** 1 - 1) / L(2) + (2 ** 2 - 1) / L(4)) / ((2 ** 2 - 1) / L(2) + (2 ** 1 - 1) / L(3));
    expect(s.values['ndcg@3']).toBeCloseTo(linear, 10);
    expect(s.values['ndcg_exp@3']).toBeCloseTo(exponential, 10);
    expect(s.values['precision@3']).toBeCloseTo(2 / 3, 10);
    expect(s.values['recall@3']).toBeCloseTo(2 / 2, 10);
    expect(s.values['mrr@3']).toBeCloseTo(1, 10);
    const e = c.expected;
    expect(s.values['ndcg@3']).toBeCloseTo(e['ndcg@3_linear'], 6);
    expect(s.values['ndcg_exp@3']).toBeCloseTo(e.alternatives.exponential_gain, 6);
    expect(s.values['precision@3']).toBeCloseTo(e['p@3'], 6);
    expect(s.values['recall@3']).toBeCloseTo(e['recall@3'], 6);
    expect(s.values['mrr@3']).toBeCloseTo(e.rr, 6);
  });

  it('M04 precision divides by k: fewer than k returned, and more than k returned', () => {
    const c = fieldCase('M04');
    const a = c.input.case_a;
    const sa = scoreRanking(a.ranking, labelsOf(a.labels), ms(`precision@${a.k}`, `recall@${a.k}`));
    expect(sa.values['precision@5']).toBeCloseTo(1 / 5, 10); // not 1/2 (divided by the 2 returned)
    expect(sa.values['recall@5']).toBeCloseTo(1 / 2, 10);
    const b = c.input.case_b;
    const sb = scoreRanking(b.ranking, labelsOf(b.labels), ms(`precision@${b.k}`, `recall@${b.k}`));
    expect(sb.values['precision@3']).toBeCloseTo(1 / 3, 10); // B at rank 4 is outside k; not 1/8
    expect(sb.values['recall@3']).toBeCloseTo(1 / 2, 10);
    expect(sa.values['precision@5']).toBeCloseTo(c.expected.case_a['p@5'], 6);
    expect(sa.values['recall@5']).toBeCloseTo(c.expected.case_a['recall@5'], 6);
    expect(sb.values['precision@3']).toBeCloseTo(c.expected.case_b['p@3'], 6);
    expect(sb.values['recall@3']).toBeCloseTo(c.expected.case_b['recall@3'], 6);
  });

  it('M06 recall divides by all labelled documents, so recall@1 and mrr@1 differ', () => {
    const c = fieldCase('M06');
    const { labels, ranking } = c.input;
    const s = scoreRanking(
      ranking,
      labelsOf(labels),
      ms('recall@1', 'recall@3', 'hit_rate@1', 'mrr@1', 'precision@1', 'precision@3', 'ndcg@3'),
    );
    expect(s.values['recall@1']).toBeCloseTo(1 / 3, 10);
    expect(s.values['recall@3']).toBeCloseTo(2 / 3, 10);
    expect(s.values['hit_rate@1']).toBeCloseTo(1, 10);
    expect(s.values['mrr@1']).toBeCloseTo(1, 10);
    expect(s.values['precision@1']).toBeCloseTo(1, 10);
    expect(s.values['precision@3']).toBeCloseTo(2 / 3, 10);
    expect(s.values['ndcg@3']).toBeCloseTo((1 / L(2) + 1 / L(4)) / (1 / L(2) + 1 / L(3) + 1 / L(4)), 10);
    const e = c.expected;
    expect(s.values['recall@1']).toBeCloseTo(e['recall@1'], 6);
    expect(s.values['recall@3']).toBeCloseTo(e['recall@3'], 6);
    expect(s.values['hit_rate@1']).toBeCloseTo(e['hit@1'], 6);
    expect(s.values['mrr@1']).toBeCloseTo(e['rr@1'], 6);
    expect(s.values['precision@1']).toBeCloseTo(e['p@1'], 6);
    expect(s.values['precision@3']).toBeCloseTo(e['p@3'], 6);
    expect(s.values['ndcg@3']).toBeCloseTo(e['ndcg@3'], 6);
  });

  it('M07 two chunks of one relevant document: credited once, at the first slot; the second is a non-relevant slot', () => {
    const c = fieldCase('M07');
    const { k, labels, ranked_chunks } = c.input;
    const docs = (ranked_chunks as string[]).map((id) => id.slice(0, id.indexOf('#')));
    expect(docs).toEqual(['guide.md', 'guide.md', 'notes.md', 'faq.md']);
    const s = scoreRanking(docs, labelsOf(labels), ms(`hit_rate@${k}`, `mrr@${k}`, `precision@${k}`, `recall@${k}`, `ndcg@${k}`));
    // doc-level gains 1, 0 (repeat), 0, 1
    expect(s.values['hit_rate@4']).toBeCloseTo(1, 10);
    expect(s.values['mrr@4']).toBeCloseTo(1, 10);
    expect(s.values['precision@4']).toBeCloseTo(2 / 4, 10);
    expect(s.values['recall@4']).toBeCloseTo(2 / 2, 10);
    expect(s.values['ndcg@4']).toBeCloseTo((1 / L(2) + 1 / L(5)) / (1 / L(2) + 1 / L(3)), 10);
    const e = c.expected;
    expect(s.values['hit_rate@4']).toBeCloseTo(e['hit@4'], 6);
    expect(s.values['mrr@4']).toBeCloseTo(e.rr, 6);
    expect(s.values['precision@4']).toBeCloseTo(e['p@4'], 6);
    expect(s.values['recall@4']).toBeCloseTo(e['recall@4'], 6);
    expect(s.values['ndcg@4']).toBeCloseTo(e['ndcg@4'], 6);
  });

  function evaluateQuestions(questions: Any[], k: number) {
    const qrels: Qrels = new Map(
      questions.map((q) => [q.id, new Map((q.labels as string[]).map((d) => [d, 1] as [string, number]))]),
    );
    const run: Run = new Map(
      questions.map((q) => [q.id, (q.ranking as string[]).map((docno, i) => ({ docno, score: -i }))]),
    );
    return evaluate(qrels, run, ms(`hit_rate@${k}`, `mrr@${k}`, `recall@${k}`, `precision@${k}`, `ndcg@${k}`));
  }

  it('M10 a question with no labels is excluded from the means and reported, never scored 1 or silently 0', () => {
    const c = fieldCase('M10');
    const r = evaluateQuestions(c.input.questions, c.input.k);
    expect(r.excluded).toEqual(['q3']);
    expect(r.excluded).toEqual(c.expected.skipped);
    expect(Object.keys(r.perQuery)).toHaveLength(c.expected.evaluated);
    // q1: A at rank 1; q2: B at rank 2
    expect(r.mean['hit_rate@2']).toBeCloseTo((1 + 1) / 2, 10);
    expect(r.mean['mrr@2']).toBeCloseTo((1 + 1 / 2) / 2, 10);
    expect(r.mean['recall@2']).toBeCloseTo((1 + 1) / 2, 10);
    expect(r.mean['precision@2']).toBeCloseTo((1 / 2 + 1 / 2) / 2, 10);
    expect(r.mean['ndcg@2']).toBeCloseTo((1 + 1 / L(3)) / 2, 10);
    const e = c.expected;
    expect(r.mean['hit_rate@2']).toBeCloseTo(e['hit@2'], 6);
    expect(r.mean['mrr@2']).toBeCloseTo(e['mrr@2'], 6);
    expect(r.mean['recall@2']).toBeCloseTo(e['recall@2'], 6);
    expect(r.mean['precision@2']).toBeCloseTo(e['p@2'], 6);
    expect(r.mean['ndcg@2']).toBeCloseTo(e['ndcg@2'], 6);
  });

  it('M11 an empty result list scores 0 on everything and stays in the means', () => {
    const c = fieldCase('M11');
    const r = evaluateQuestions(c.input.questions, c.input.k);
    expect(r.excluded).toEqual([]);
    expect(Object.keys(r.perQuery)).toHaveLength(c.expected.evaluated);
    for (const v of Object.values(r.perQuery.q2)) expect(v).toBe(0);
    expect(r.mean['hit_rate@3']).toBeCloseTo((1 + 0) / 2, 10);
    expect(r.mean['mrr@3']).toBeCloseTo((1 + 0) / 2, 10);
    expect(r.mean['recall@3']).toBeCloseTo((1 + 0) / 2, 10);
    expect(r.mean['precision@3']).toBeCloseTo((1 / 3 + 0) / 2, 10);
    expect(r.mean['ndcg@3']).toBeCloseTo((1 + 0) / 2, 10);
    const e = c.expected;
    expect(r.mean['hit_rate@3']).toBeCloseTo(e['hit@3'], 6);
    expect(r.mean['mrr@3']).toBeCloseTo(e['mrr@3'], 6);
    expect(r.mean['recall@3']).toBeCloseTo(e['recall@3'], 6);
    expect(r.mean['precision@3']).toBeCloseTo(e['p@3'], 6);
    expect(r.mean['ndcg@3']).toBeCloseTo(e['ndcg@3'], 6);
  });
});
