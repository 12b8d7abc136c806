/** The evaluate command: trec_eval-like rows, JSON, stderr diagnostics, errors by code. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVALUATE_MEASURES, runEvaluateCommand } from '../../src/cli/evaluate.js';
import { isHarnessError } from '../../src/errors.js';
import { thrown } from '../helpers/errors.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const conformance = path.resolve(repoRoot, '../shared/conformance');
const tmp = mkdtempSync(path.join(tmpdir(), 'rs-eval-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const qrelsPath = path.join(tmp, 'small.qrels');
const runPath = path.join(tmp, 'small.run');
// q1: a relevant at rank 2; q2: judged 0 only (excluded); q3: not in run (scores 0); zz: not in qrels (ignored)
writeFileSync(qrelsPath, 'q1 0 a 1\nq2 0 b 0\nq3 0 c 1\n');
writeFileSync(runPath, 'q1 Q0 x 1 2 t\nq1 Q0 a 2 1 t\nzz Q0 a 1 1 t\n');


describe('evaluate command', () => {
  it('default measures: hit_rate, recall, precision, mrr, ndcg, map at 1, 3, 5, 10 and r_precision', () => {
    expect(DEFAULT_EVALUATE_MEASURES).toHaveLength(6 * 4 + 1);
    expect(DEFAULT_EVALUATE_MEASURES.slice(0, 6)).toEqual(['hit_rate@1', 'recall@1', 'precision@1', 'mrr@1', 'ndcg@1', 'map@1']);
    expect(DEFAULT_EVALUATE_MEASURES.at(-1)).toBe('r_precision');
  });

  it('plain output is trec_eval-like rows "measure<TAB>all<TAB>value"; --per-query adds rows per question', () => {
    const { stdout, stderr } = runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['mrr@2,precision@2'], perQuery: true });
    // q1: mrr 1/2, precision 1/2; q3: 0, 0; means over 2 questions
    expect(stdout).toBe(
      ['mrr@2\tq1\t0.5000', 'precision@2\tq1\t0.5000', 'mrr@2\tq3\t0.0000', 'precision@2\tq3\t0.0000', 'mrr@2\tall\t0.2500', 'precision@2\tall\t0.2500', ''].join('\n'),
    );
    expect(stderr).toContain('q2'); // excluded
    expect(stderr).toContain('zz'); // ignored
  });

  it('--json prints mean, per_query and excluded at full precision', () => {
    const { stdout } = runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['ndcg@3'], json: true });
    const out = JSON.parse(stdout);
    expect(out.mean['ndcg@3']).toBeCloseTo((1 / Math.log2(3) + 0) / 2, 10);
    expect(out.per_query.q1['ndcg@3']).toBeCloseTo(1 / Math.log2(3), 10);
    expect(out.excluded).toEqual(['q2']);
    expect(out.ignored).toEqual(['zz']);
  });

  it('--relevance-threshold is passed through', () => {
    const q = path.join(tmp, 'graded.qrels');
    writeFileSync(q, 'q1 0 a 1\nq1 0 b 2\n');
    const r = path.join(tmp, 'graded.run');
    writeFileSync(r, 'q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n');
    const out = JSON.parse(runEvaluateCommand({ qrels: q, run: r, measures: ['mrr@2'], json: true, relevanceThreshold: 2 }).stdout);
    expect(out.mean['mrr@2']).toBeCloseTo(1 / 2, 10);
  });

  it('-m accepts ir_measures and trec_eval names, prints canonical names and scores a measure named twice once', () => {
    const out = runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['nDCG@10', 'P@5', 'precision@5', 'P_5', 'AP'] });
    const names = out.stdout.trim().split('\n').map((l) => l.split('\t')[0]);
    expect(names).toEqual(['ndcg@10', 'precision@5', 'map']);
  });

  it('a bad measure fails with MEASURE_UNKNOWN, a missing file with QRELS_INVALID / RUN_INVALID', () => {
    expect(isHarnessError(thrown(() => runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['hits@5'] })), 'MEASURE_UNKNOWN')).toBe(true);
    expect(isHarnessError(thrown(() => runEvaluateCommand({ qrels: path.join(tmp, 'no.qrels'), run: runPath })), 'QRELS_INVALID')).toBe(true);
    expect(isHarnessError(thrown(() => runEvaluateCommand({ qrels: qrelsPath, run: path.join(tmp, 'no.run') })), 'RUN_INVALID')).toBe(true);
    expect(isHarnessError(thrown(() => runEvaluateCommand({ qrels: qrelsPath, run: runPath, relevanceThreshold: 0 })), 'USAGE')).toBe(true);
  });

  it.skipIf(!existsSync(conformance))('on conformance case-05 the JSON means agree with trec_eval to 1e-9', () => {
    const expected = JSON.parse(readFileSync(path.join(conformance, 'expected.jsonl'), 'utf8').split('\n')[5]);
    expect(expected.case).toBe('case-05');
    const out = JSON.parse(
      runEvaluateCommand({
        qrels: path.join(conformance, 'case-05.qrels'),
        run: path.join(conformance, 'case-05.run'),
        json: true,
      }).stdout,
    );
    expect(Object.keys(out.mean)).toEqual([...DEFAULT_EVALUATE_MEASURES]);
    for (const name of DEFAULT_EVALUATE_MEASURES) expect(out.mean[name], name).toBeCloseTo(expected.mean[name], 9);
  });
});
