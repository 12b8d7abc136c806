/**
 * Agreement between two assessors who graded the same items: the confusion matrix, Cohen's kappa (unweighted,
 * linear or quadratic weights) and binary agreement at a relevance threshold. Pure.
 *
 * Sources: Cohen (1960), "A coefficient of agreement for nominal scales"; Cohen (1968), "Weighted kappa: nominal scale
 * agreement with provision for scaled disagreement or partial credit". With disagreement weights w(i, j) over the
 * categories 0..c−1, observed matrix p(i, j) = n(i, j)/n and marginals r(i), s(j):
 *
 *   kappa_w = 1 − (Σ w(i, j)·p(i, j)) / (Σ w(i, j)·r(i)·s(j))
 *
 * with w(i, j) = 0 when i = j and 1 otherwise (unweighted: the familiar (p_o − p_e)/(1 − p_e)), |i − j|/(c − 1)
 * (linear) or ((i − j)/(c − 1))² (quadratic). The category range c is the grade scale's, not the grades seen, so two
 * studies on the same scale are comparable.
 */
import { HarnessError } from '../errors.js';

/** Disagreement weights of {@link cohenKappa}: `none` (unweighted), `linear` or `quadratic`. */
export type KappaWeights = 'none' | 'linear' | 'quadratic';

/** The outcome of {@link agreement}. */
export interface Agreement {
  /** Items graded by both assessors. */
  n: number;
  /** `matrix[a][b]`: items graded `a` by the first assessor and `b` by the second; size `grades × grades`. */
  matrix: number[][];
  /** Share of items with the same grade, in [0, 1]; NaN when n = 0. */
  exact: number;
  /** Unweighted Cohen's kappa, in [−1, 1]; NaN when n = 0 or chance agreement is 1 (one grade only). */
  kappa: number;
  /** Weighted kappa with the weights asked for (default linear); NaN as for `kappa`. */
  weightedKappa: number;
  /** Weights used for `weightedKappa`. */
  weights: KappaWeights;
  /** Share of items on the same side of the relevance threshold (grade ≥ threshold), in [0, 1]; NaN when n = 0. */
  binaryAgreement: number;
  /** Unweighted kappa of the two binary labels (grade ≥ threshold). */
  binaryKappa: number;
}

/** Options of {@link agreement}. */
export interface AgreementOptions {
  /** Number of grades on the scale: grades are integers 0..grades−1; default 4 (0-3). */
  grades?: number;
  /** Weights of `weightedKappa`; default `linear`. */
  weights?: KappaWeights;
  /** Relevance threshold for the binary figures, integer in 1..grades−1; default 1. */
  threshold?: number;
}

function weight(i: number, j: number, c: number, w: KappaWeights): number {
  if (i === j) return 0;
  if (w === 'none') return 1;
  const d = Math.abs(i - j) / (c - 1);
  return w === 'linear' ? d : d * d;
}

/**
 * Cohen's kappa of a `c × c` confusion matrix (counts) with disagreement weights `w` (formula in this module's header).
 * @returns kappa in [−1, 1]; NaN when the matrix is empty or the expected disagreement is 0.
 */
export function cohenKappa(matrix: readonly (readonly number[])[], w: KappaWeights = 'none'): number {
  const c = matrix.length;
  let n = 0;
  const rows = new Float64Array(c);
  const cols = new Float64Array(c);
  for (let i = 0; i < c; i++) {
    for (let j = 0; j < c; j++) {
      const x = matrix[i][j];
      n += x;
      rows[i] += x;
      cols[j] += x;
    }
  }
  if (n === 0) return NaN;
  let observed = 0;
  let expected = 0;
  for (let i = 0; i < c; i++) {
    for (let j = 0; j < c; j++) {
      const wij = weight(i, j, c, w);
      observed += (wij * matrix[i][j]) / n;
      expected += (wij * rows[i] * cols[j]) / (n * n);
    }
  }
  return expected === 0 ? NaN : 1 - observed / expected;
}

/**
 * Agreement of two assessors over paired grades: `pairs[i] = [gradeA, gradeB]`.
 * @throws HarnessError `USAGE` when a grade is not an integer in 0..grades−1, or `grades`/`threshold` are out of range.
 */
export function agreement(pairs: readonly (readonly [number, number])[], options: AgreementOptions = {}): Agreement {
  const c = options.grades ?? 4;
  const weights = options.weights ?? 'linear';
  const t = options.threshold ?? 1;
  if (!Number.isSafeInteger(c) || c < 2) {
    throw new HarnessError('USAGE', `agreement: grades must be an integer >= 2, got ${String(c)}`, {
      remedy: 'give the number of grades on the scale (4 for 0-3)',
    });
  }
  if (!Number.isSafeInteger(t) || t < 1 || t >= c) {
    throw new HarnessError('USAGE', `agreement: threshold must be an integer from 1 to ${c - 1}, got ${String(t)}`, {
      remedy: 'use the relevance threshold of the sweep (1 by default)',
    });
  }
  const matrix = Array.from({ length: c }, () => new Array<number>(c).fill(0));
  const binary = [
    [0, 0],
    [0, 0],
  ];
  for (const [a, b] of pairs) {
    for (const g of [a, b]) {
      if (!Number.isSafeInteger(g) || g < 0 || g >= c) {
        throw new HarnessError('USAGE', `agreement: grade ${String(g)} is not an integer from 0 to ${c - 1}`, {
          remedy: `grades of this scale are 0..${c - 1}`,
        });
      }
    }
    matrix[a][b]++;
    binary[a >= t ? 1 : 0][b >= t ? 1 : 0]++;
  }
  const n = pairs.length;
  let same = 0;
  for (let i = 0; i < c; i++) same += matrix[i][i];
  return {
    n,
    matrix,
    exact: n === 0 ? NaN : same / n,
    kappa: cohenKappa(matrix, 'none'),
    weightedKappa: cohenKappa(matrix, weights),
    weights,
    binaryAgreement: n === 0 ? NaN : (binary[0][0] + binary[1][1]) / n,
    binaryKappa: cohenKappa(binary, 'none'),
  };
}
