/**
 * Loops that replace spreading an input-sized array into a call (`Math.max(...xs)`, `out.push(...xs)`): a spread
 * passes every element as an argument on the stack, and V8 throws `RangeError: Maximum call stack size exceeded`
 * somewhere past ~100,000 elements (issue 24: a grid of 360,000 configurations exited 70). These take any length.
 */

/** The largest of `values` and `floor` (`Math.max(floor, ...values)` without the spread). NaN entries are skipped. */
export function maxOf(values: Iterable<number>, floor = -Infinity): number {
  let m = floor;
  for (const v of values) if (v > m) m = v;
  return m;
}

/** The smallest of `values` and `ceiling` (`Math.min(ceiling, ...values)` without the spread). NaN entries are skipped. */
export function minOf(values: Iterable<number>, ceiling = Infinity): number {
  let m = ceiling;
  for (const v of values) if (v < m) m = v;
  return m;
}

/** Appends every item of `items` to `target` in order (`target.push(...items)` without the spread); returns `target`. */
export function appendAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const x of items) target.push(x);
  return target;
}
