/**
 * Do two sets of labels put the configurations in the same order? Kendall's tau-b between the configurations' means
 * of one measure under qrels A (e.g. persons' labels only) and under qrels B (persons' and a model's), with the top
 * configuration under each. Pure.
 *
 * Kendall's tau-b (Kendall 1945, "The treatment of ties in ranking problems"): over all pairs (i, j) of items,
 * concordant C (same sign of x_i − x_j and y_i − y_j), discordant D (opposite signs), ties only in x (T_x) or only in y
 * (T_y): tau_b = (C − D) / sqrt((C + D + T_x)(C + D + T_y)); pairs tied in both count in neither. In [−1, 1]. Voorhees
 * (2000, "Variations in relevance judgments and the measurement of retrieval effectiveness") reads tau ≥ 0.9 between
 * system orders as "equivalent"; below it the labels change the decision.
 */
import { evaluate, type QrelsInput, type ScoreOptions } from './evaluate.js';
import { formatMeasure, type Measure } from './measures.js';

/**
 * Kendall's tau-b of two equally long lists of numbers (formula in the module header), O(n²).
 * @returns tau-b in [−1, 1]; NaN when n < 2 or either list is constant.
 * @throws Error when the lengths differ (a caller's bug).
 */
export function kendallTauB(x: readonly number[], y: readonly number[]): number {
  if (x.length !== y.length) throw new Error(`kendallTauB: ${x.length} and ${y.length} values`);
  let c = 0;
  let d = 0;
  let tx = 0;
  let ty = 0;
  for (let i = 0; i < x.length; i++) {
    for (let j = i + 1; j < x.length; j++) {
      const a = Math.sign(x[i] - x[j]);
      const b = Math.sign(y[i] - y[j]);
      if (a === 0 && b === 0) continue;
      if (a === 0) tx++;
      else if (b === 0) ty++;
      else if (a === b) c++;
      else d++;
    }
  }
  const den = Math.sqrt((c + d + tx) * (c + d + ty));
  return den === 0 ? NaN : (c - d) / den;
}

/** The outcome of {@link orderAgreement}. */
export interface OrderAgreement {
  /** Measure compared (canonical name, e.g. `ndcg@10`). */
  measure: string;
  /** Configurations compared. */
  configurations: number;
  /** Kendall's tau-b between the two orders. */
  tau: number;
  /** Best configuration under A and under B (highest mean; ties: smallest id in code-unit order) with its mean. */
  topA: { id: string; mean: number } | null;
  topB: { id: string; mean: number } | null;
  /** Mean per configuration under A and B (NaN when no question is scorable). */
  meansA: Record<string, number>;
  meansB: Record<string, number>;
}

function top(means: Record<string, number>): { id: string; mean: number } | null {
  let best: { id: string; mean: number } | null = null;
  for (const id of Object.keys(means).sort()) {
    const m = means[id];
    if (Number.isNaN(m)) continue;
    if (best === null || m > best.mean) best = { id, mean: m };
  }
  return best;
}

/**
 * Scores each configuration's rankings under two qrels with `measure` (src/score/evaluate.ts, trec_eval `-c`
 * conventions: questions of each qrels with a relevant document, missing rankings scored 0) and compares the orders.
 * @param rankings configuration id → question id → document ids in rank order (1-based rank = index + 1; a document
 *   listed again later is a non-relevant slot, as in the sweep).
 */
export function orderAgreement(
  rankings: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>,
  qrelsA: QrelsInput,
  qrelsB: QrelsInput,
  measure: Measure,
  options?: ScoreOptions,
): OrderAgreement {
  const meansA = Object.create(null) as Record<string, number>; // keyed by configuration ids: no prototype
  const meansB = Object.create(null) as Record<string, number>;
  const name = formatMeasure(measure);
  for (const [id, byQuestion] of rankings) {
    const run = new Map<string, { docno: string; score: number }[]>();
    for (const [qid, docs] of byQuestion) run.set(qid, docs.map((docno, i) => ({ docno, score: docs.length - i })));
    const a = evaluate(qrelsA, run, [measure], options);
    const b = evaluate(qrelsB, run, [measure], options);
    meansA[id] = a.mean[name] ?? NaN;
    meansB[id] = b.mean[name] ?? NaN;
  }
  const ids = Object.keys(meansA).filter((id) => !Number.isNaN(meansA[id]) && !Number.isNaN(meansB[id]));
  return {
    measure: name,
    configurations: ids.length,
    tau: kendallTauB(
      ids.map((id) => meansA[id]),
      ids.map((id) => meansB[id]),
    ),
    topA: top(meansA),
    topB: top(meansB),
    meansA,
    meansB,
  };
}
