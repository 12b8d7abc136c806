/**
 * trec_eval 10.0 conformance: 24 qrels/run pairs with the values trec_eval gives (per question and mean), in
 * ../shared/conformance. Every value must agree to 1e-9 and `excluded` must equal `excluded_no_positive`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readQrels, readRun } from '../../src/load/trec.js';
import { evaluate } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = path.resolve(repoRoot, '../shared/conformance');

interface Expected {
  case: string;
  excluded_no_positive: string[];
  mean: Record<string, number>;
  per_query: Record<string, Record<string, number>>;
}

const cases: Expected[] = existsSync(dir)
  ? readFileSync(path.join(dir, 'expected.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Expected)
  : [];

describe.skipIf(!existsSync(dir))('trec_eval 10.0 conformance (../shared/conformance)', () => {
  it('has the 24 cases the README describes', () => {
    expect(cases.map((c) => c.case)).toEqual(Array.from({ length: 24 }, (_, i) => `case-${String(i).padStart(2, '0')}`));
  });

  for (const c of cases) {
    it(`${c.case}: every measure of every question and the means agree with trec_eval to 1e-9`, () => {
      const measures = Object.keys(c.mean).map(parseMeasure);
      expect(measures.length).toBe(25);
      const r = evaluate(readQrels(path.join(dir, `${c.case}.qrels`)), readRun(path.join(dir, `${c.case}.run`)), measures);
      expect([...r.excluded].sort()).toEqual([...c.excluded_no_positive].sort());
      expect(Object.keys(r.perQuery).sort()).toEqual(Object.keys(c.per_query).sort());
      for (const [qid, values] of Object.entries(c.per_query)) {
        for (const [name, v] of Object.entries(values)) {
          expect(r.perQuery[qid][name], `${qid} ${name}`).toBeCloseTo(v, 9);
        }
      }
      for (const [name, v] of Object.entries(c.mean)) expect(r.mean[name], `mean ${name}`).toBeCloseTo(v, 9);
      expect(r.warnings).toEqual([]);
    });
  }

  it('uncut map equals trec_eval map_cut_10 on the cases whose run questions retrieve at most 10 documents', () => {
    let checked = 0;
    for (const c of cases) {
      const run = readRun(path.join(dir, `${c.case}.run`));
      if (Math.max(...[...run.values()].map((e) => e.length)) > 10) continue;
      const r = evaluate(readQrels(path.join(dir, `${c.case}.qrels`)), run, [parseMeasure('map')]);
      for (const [qid, values] of Object.entries(c.per_query)) expect(r.perQuery[qid].map, `${c.case} ${qid}`).toBeCloseTo(values['map@10'], 9);
      expect(r.mean.map, c.case).toBeCloseTo(c.mean['map@10'], 9);
      checked++;
    }
    expect(checked).toBe(3);
  });
});
