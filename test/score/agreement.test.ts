import { describe, expect, it } from 'vitest';
import { agreement, cohenKappa } from '../../src/score/agreement.js';
import { thrown } from '../helpers/errors.js';

describe('cohenKappa', () => {
  it('unweighted: (p_o - p_e) / (1 - p_e) on a 2x2 table worked by hand', () => {
    // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no; n = 50.
    const m = [
      [15, 10],
      [5, 20],
    ];
    const po = (15 + 20) / 50;
    const pe = ((25 / 50) * (20 / 50)) + ((25 / 50) * (30 / 50));
    expect(cohenKappa(m)).toBeCloseTo((po - pe) / (1 - pe), 10);
  });

  it('linear and quadratic weights on a 3x3 table worked by hand', () => {
    const m = [
      [2, 1, 0],
      [0, 2, 1],
      [1, 0, 3],
    ];
    const n = 10;
    const rows = [3, 3, 4];
    const cols = [3, 3, 4];
    const w = (i: number, j: number, q: boolean) => (q ? ((i - j) / 2) ** 2 : Math.abs(i - j) / 2);
    for (const q of [false, true]) {
      let o = 0;
      let e = 0;
      for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) {
        o += (w(i, j, q) * m[i][j]) / n;
        e += (w(i, j, q) * rows[i] * cols[j]) / (n * n);
      }
      expect(cohenKappa(m, q ? 'quadratic' : 'linear')).toBeCloseTo(1 - o / e, 10);
    }
  });

  it('perfect agreement is 1; an empty table and a one-grade table are NaN', () => {
    expect(cohenKappa([[3, 0], [0, 4]])).toBeCloseTo(1, 10);
    expect(cohenKappa([[0, 0], [0, 0]])).toBeNaN();
    expect(cohenKappa([[5, 0], [0, 0]])).toBeNaN();
  });
});

describe('agreement', () => {
  it('confusion matrix, exact share and binary agreement at the threshold', () => {
    const a = agreement([[0, 0], [1, 2], [3, 3], [2, 0]], { grades: 4, threshold: 2 });
    expect(a.n).toBe(4);
    expect(a.matrix[1][2]).toBe(1);
    expect(a.matrix[2][0]).toBe(1);
    expect(a.exact).toBeCloseTo(2 / 4, 10);
    // binary at 2: (0,0) agree, (1,2) differ, (3,3) agree, (2,0) differ.
    expect(a.binaryAgreement).toBeCloseTo(2 / 4, 10);
    // binary table [[1,1],[1,1]]: p_o = 1/2, p_e = 1/2 -> kappa 0.
    expect(a.binaryKappa).toBeCloseTo(0, 10);
  });

  it('refuses a grade off the scale, naming it', () => {
    const e = thrown(() => agreement([[0, 4]], { grades: 4 }));
    expect(e.code).toBe('USAGE');
    expect(e.message).toContain('4');
  });
});
