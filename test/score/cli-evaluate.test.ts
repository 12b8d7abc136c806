/** The evaluate command: trec_eval-like rows, JSON, stderr diagnostics, errors by code. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVALUATE_MEASURES, runEvaluateCommand } from '../../src/cli/evaluate.js';
import { runCli } from '../../src/cli/main.js';
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

  it('-m Judged@10 bpref RR: canonical judged@10, bpref, recip_rank; -J adds the condensed form of each right after it', () => {
    // q1 ranks x (unjudged) then a (relevant): judged@10 = 1/10, bpref = 1 (no judged non-relevant above a),
    // recip_rank = 1/2, recip_rank_condensed = 1 (x removed); q3 is missing from the run: 0 everywhere
    const plain = JSON.parse(runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['Judged@10', 'bpref', 'RR'], json: true }).stdout);
    expect(Object.keys(plain.mean)).toEqual(['judged@10', 'bpref', 'recip_rank']);
    const j = JSON.parse(runEvaluateCommand({ qrels: qrelsPath, run: runPath, measures: ['Judged@10', 'bpref', 'RR'], json: true, condensed: true }).stdout);
    expect(Object.keys(j.mean)).toEqual(['judged@10', 'bpref', 'bpref_condensed', 'recip_rank', 'recip_rank_condensed']);
    expect(j.per_query.q1['judged@10']).toBeCloseTo(1 / 10, 10);
    expect(j.per_query.q1.bpref).toBeCloseTo(1 / 1, 10);
    expect(j.per_query.q1.recip_rank).toBeCloseTo(1 / 2, 10);
    expect(j.per_query.q1.recip_rank_condensed).toBeCloseTo(1 / 1, 10);
    expect(j.mean.recip_rank_condensed).toBeCloseTo((1 + 0) / 2, 10);
    expect(j.mean['judged@10']).toBeCloseTo((1 / 10 + 0) / 2, 10);
  });

  it('the command line reads -m Judged@10 bpref -J (the variadic -m stops at -J)', async () => {
    let out = '';
    const code = await runCli(['node', 'retrieval-sweep', 'evaluate', qrelsPath, runPath, '-m', 'Judged@10', 'bpref', '-J'], {
      stdout: (s) => void (out += s),
      stderr: () => undefined,
    });
    expect(code).toBe(0);
    expect(out.trim().split('\n').map((l) => l.split('\t')[0])).toEqual(['judged@10', 'bpref', 'bpref_condensed']);
  });

  it.skipIf(!existsSync(conformance))('-J on conformance case-03: the JSON means equal expected-judged.jsonl to 1e-9', () => {
    const expected = JSON.parse(readFileSync(path.join(conformance, 'expected-judged.jsonl'), 'utf8').split('\n')[3]);
    expect(expected.case).toBe('case-03');
    const out = JSON.parse(
      runEvaluateCommand({
        qrels: path.join(conformance, 'case-03.qrels'),
        run: path.join(conformance, 'case-03.run'),
        measures: ['ndcg@10', 'P@5', 'map@10', 'RR', 'Bpref', 'Rprec', 'judged@5'],
        condensed: true,
        json: true,
      }).stdout,
    );
    for (const name of ['ndcg_condensed@10', 'precision_condensed@5', 'map_condensed@10', 'recip_rank', 'recip_rank_condensed', 'bpref', 'bpref_condensed', 'r_precision_condensed', 'judged@5']) {
      expect(out.mean[name], name).toBeCloseTo(expected.mean[name], 9);
    }
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
