/**
 * Work batches for worker threads: consecutive runs of items (documents, chunks) of about a given number of
 * characters of text.
 */

import { textLength } from './load/text-store.js';

/**
 * Consecutive index ranges `[from, to)` covering `items` in order, each closed as soon as its texts reach
 * `batchChars` characters (`textLength`: a stored document's or chunk's text is not read) (so each holds at least one item; a single item longer than that is a batch alone).
 * `[]` for no items.
 */
export function batchesByChars(items: readonly { text: string }[], batchChars: number): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  let chars = 0;
  for (let i = 0; i < items.length; i++) {
    chars += textLength(items[i]);
    if (chars >= batchChars) {
      out.push([from, i + 1]);
      from = i + 1;
      chars = 0;
    }
  }
  if (from < items.length) out.push([from, items.length]);
  return out;
}
