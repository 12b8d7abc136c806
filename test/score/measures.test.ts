/** Canonical measure names: parse/format round trip and refusals. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HarnessError, isHarnessError } from '../../src/errors.js';
import {
  formatMeasure,
  KNOWN_MEASURE_NAMES,
  MEASURE_FAMILIES,
  measuresAtK,
  parseMeasure,
} from '../../src/score/measures.js';
import { thrown } from '../helpers/errors.js';


describe('measure names', () => {
  it('parses each family with its cutoff', () => {
    expect(parseMeasure('ndcg@10')).toEqual({ family: 'ndcg', k: 10 });
    expect(parseMeasure('hit_rate@1')).toEqual({ family: 'hit_rate', k: 1 });
    expect(parseMeasure('ndcg_exp@5')).toEqual({ family: 'ndcg_exp', k: 5 });
    expect(parseMeasure('r_precision')).toEqual({ family: 'r_precision', k: null });
  });

  it('formatMeasure(parseMeasure(name)) returns the name for every family and cutoff', () => {
    fc.assert(
      fc.property(fc.constantFrom(...MEASURE_FAMILIES), fc.integer({ min: 1, max: 100000 }), (family, k) => {
        const name = family === 'r_precision' ? family : `${family}@${k}`;
        expect(formatMeasure(parseMeasure(name))).toBe(name);
        const m = { family, k: family === 'r_precision' ? null : k };
        expect(parseMeasure(formatMeasure(m))).toEqual(m);
      }),
    );
  });

  it('an unknown name fails with MEASURE_UNKNOWN and lists the known ones', () => {
    for (const bad of ['ndcg10', 'hits@5', 'P(rel=2)@5', 'P', 'ndcg@0', 'ndcg@05', 'ndcg@-1', 'ndcg@1.5', 'ndcg@', 'recall', 'r_precision@5', 'recall@ 5', '', 'ndcg@1e3']) {
      const e = thrown(() => parseMeasure(bad));
      expect(isHarnessError(e, 'MEASURE_UNKNOWN'), bad).toBe(true);
      expect((e as HarnessError).remedy).toContain(KNOWN_MEASURE_NAMES);
    }
    for (const f of MEASURE_FAMILIES) expect(KNOWN_MEASURE_NAMES).toContain(f);
  });

  it('formatMeasure refuses a cutoff that does not fit the family', () => {
    expect(isHarnessError(thrown(() => formatMeasure({ family: 'recall', k: null })), 'MEASURE_UNKNOWN')).toBe(true);
    expect(isHarnessError(thrown(() => formatMeasure({ family: 'ndcg', k: 2.5 })), 'MEASURE_UNKNOWN')).toBe(true);
    expect(isHarnessError(thrown(() => formatMeasure({ family: 'r_precision', k: 3 })), 'MEASURE_UNKNOWN')).toBe(true);
  });

  it('measuresAtK defaults to every family that takes a cutoff, in report order', () => {
    expect(measuresAtK(5).map(formatMeasure)).toEqual([
      'hit_rate@5',
      'recall@5',
      'precision@5',
      'mrr@5',
      'ndcg@5',
      'ndcg_exp@5',
      'map@5',
    ]);
    expect(measuresAtK(3, ['mrr', 'r_precision'])).toEqual([
      { family: 'mrr', k: 3 },
      { family: 'r_precision', k: null },
    ]);
    expect(isHarnessError(thrown(() => measuresAtK(0)), 'MEASURE_UNKNOWN')).toBe(true);
  });
});
