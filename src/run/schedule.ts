/**
 * The executor's scheduling policy (issue 25, wall time at scale): among the units that are ready to start, start the
 * one on the longest remaining path first. This is list scheduling with critical-path priorities (Hu 1961, "Parallel
 * sequencing and assembly line problems", Operations Research 9(6); Graham 1966, "Bounds for certain multiprocessing
 * anomalies", Bell System Technical Journal 45(9), and 1969, "Bounds on multiprocessing timing anomalies", SIAM J.
 * Appl. Math. 17(2)): a unit's priority is its own cost plus the largest priority among the units that wait for it,
 * so work that holds up a long chain (a corpus embedding, then its dense searches, fusion and scoring) goes before work
 * that ends soon (a BM25 build whose only dependents are short). Plan order breaks ties, so a plan whose units all cost
 * the same and form equal chains runs in plan order.
 *
 * Pure: no clock, no handlers; the executor (src/run/execute.ts) supplies the edges and the costs.
 */

/**
 * Each unit's priority: the cost of the longest path from the unit (inclusive) to the end of the plan,
 * `rank(u) = cost(u) + max(rank(s) for s in successors(u))` (0 for the max over none).
 *
 * @param order Unit ids in an order where every unit comes before its successors (the plan order: inputs first, lane
 *   successors later in plan order).
 * @param successors The ids that cannot start before each unit has finished (its dependents and the next unit of its
 *   lane); ids outside `order` are ignored.
 * @param cost A unit's cost in relative units (the handlers' `cost`, default 1): finite and ≥ 0.
 * @returns Rank by id, in the same relative units.
 * @throws Error when a cost is negative, NaN or infinite (a handler bug), naming the unit and the value; or when a
 *   successor comes before its unit in `order` (not a plan order).
 */
export function pathRanks(order: readonly string[], successors: (id: string) => readonly string[], cost: (id: string) => number): Map<string, number> {
  const position = new Map(order.map((id, i) => [id, i]));
  const ranks = new Map<string, number>();
  for (let i = order.length - 1; i >= 0; i--) {
    const id = order[i];
    const c = cost(id);
    if (!Number.isFinite(c) || c < 0) throw new Error(`unit ${id}: cost ${c} is not a finite number ≥ 0 (a bug in its kind's cost())`);
    let longest = 0;
    for (const s of successors(id)) {
      const p = position.get(s);
      if (p === undefined) continue;
      if (p <= i) throw new Error(`unit ${s} must come after unit ${id} in the scheduling order (it waits for it)`);
      longest = Math.max(longest, ranks.get(s)!);
    }
    ranks.set(id, c + longest);
  }
  return ranks;
}

/**
 * The ready unit to start next: the highest rank; among equal ranks, the earliest in plan order.
 * @param ready Ids of the units that could start now (non-empty).
 * @param rank Each unit's rank ({@link pathRanks}).
 * @param planIndex Each unit's position in plan order (0-based).
 * @returns The chosen id.
 * @throws Error when `ready` is empty.
 */
export function pickNext(ready: Iterable<string>, rank: ReadonlyMap<string, number>, planIndex: ReadonlyMap<string, number>): string {
  let best: string | undefined;
  for (const id of ready) {
    if (best === undefined) {
      best = id;
      continue;
    }
    const a = rank.get(id)!;
    const b = rank.get(best)!;
    if (a > b || (a === b && planIndex.get(id)! < planIndex.get(best)!)) best = id;
  }
  if (best === undefined) throw new Error('pickNext: no unit is ready');
  return best;
}
