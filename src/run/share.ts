/**
 * Attributing one shared cost to the units that share it. Pure.
 */

/**
 * Shares `total` seconds out in proportion to `counts`: share_i = total × counts_i / Σ counts. The shares sum to the
 * total (up to rounding), so a cost paid once is attributed once. All counts 0 (or none) gives equal shares of 0.
 *
 * Used for a model's document embedding time: each chunking's semantic rows carry total × (that chunking's chunk
 * texts / all chunkings' chunk texts), not the whole time each (issue 22).
 *
 * @param total seconds (or any amount), ≥ 0. @param counts one non-negative weight per unit.
 * @returns one share per unit, in order.
 */
export function shareByCounts(total: number, counts: readonly number[]): number[] {
  let sum = 0;
  for (const c of counts) sum += c;
  if (sum <= 0) return counts.map(() => 0);
  return counts.map((c) => (total * c) / sum);
}
