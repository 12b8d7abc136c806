/**
 * Work batches for worker threads: consecutive runs of items (documents, chunks) of about a given number of
 * characters of text.
 */

/**
 * Consecutive index ranges `[from, to)` covering `items` in order, each closed as soon as its texts reach
 * `batchChars` characters (so each holds at least one item; a single item longer than that is a batch alone).
 * `[]` for no items.
 */
export function batchesByChars(items: readonly { text: string }[], batchChars: number): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  let chars = 0;
  for (let i = 0; i < items.length; i++) {
    chars += items[i].text.length;
    if (chars >= batchChars) {
      out.push([from, i + 1]);
      from = i + 1;
      chars = 0;
    }
  }
  if (from < items.length) out.push([from, items.length]);
  return out;
}
