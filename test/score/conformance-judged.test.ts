/**
 * trec_eval 10.0 / ir_measures conformance of the measures that know what is unjudged: judged@k (ir_measures
 * Judged@k), bpref (trec_eval -m bpref), recip_rank (uncut) and every `*_condensed` measure (trec_eval -J), on the
 * 24 cases of ../shared/conformance (`expected-judged.jsonl`, described in its README). Every value of every question
 * and every mean must agree to 1e-9; questions with no positive grade are left out, as in `expected.jsonl`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readQrels, readRun } from '../../src/load/trec.js';
import { evaluate } from '../../src/score/evaluate.js';
import { formatMeasure, parseMeasure } from '../../src/score/measures.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = path.resolve(repoRoot, '../shared/conformance');

interface Expected {
  case: string;
  mean: Record<string, number>;
  per_query: Record<string, Record<string, number>>;
}

const cases: Expected[] = existsSync(dir)
  ? readFileSync(path.join(dir, 'expected-judged.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Expected)
  : [];

describe.skipIf(!existsSync(dir))('judged-aware measures: conformance (../shared/conformance/expected-judged.jsonl)', () => {
  it('has the 24 cases, each with 29 measures whose names are canonical (parse then format gives them back)', () => {
    expect(cases.map((c) => c.case)).toEqual(Array.from({ length: 24 }, (_, i) => `case-${String(i).padStart(2, '0')}`));
    for (const c of cases) {
      const names = Object.keys(c.mean);
      // judged@1,3,5,10 + 5 condensed families x 4 cutoffs + bpref, bpref_condensed, recip_rank, recip_rank_condensed, r_precision_condensed
      expect(names.length, c.case).toBe(4 + 5 * 4 + 5);
      for (const n of names) expect(formatMeasure(parseMeasure(n))).toBe(n);
    }
  });

  for (const c of cases) {
    it(`${c.case}: every measure of every question and the means agree to 1e-9`, () => {
      const measures = Object.keys(c.mean).map(parseMeasure);
      const r = evaluate(readQrels(path.join(dir, `${c.case}.qrels`)), readRun(path.join(dir, `${c.case}.run`)), measures);
      expect(Object.keys(r.perQuery).sort()).toEqual(Object.keys(c.per_query).sort());
      for (const [qid, values] of Object.entries(c.per_query)) {
        for (const [name, v] of Object.entries(values)) expect(r.perQuery[qid][name], `${qid} ${name}`).toBeCloseTo(v, 9);
      }
      for (const [name, v] of Object.entries(c.mean)) expect(r.mean[name], `mean ${name}`).toBeCloseTo(v, 9);
    });
  }
});
