/**
 * cl100k_base's byte-pair encoding of one pre-token, the same ids as js-tiktoken 1.0.21's `encode(pre, [], [])`,
 * without its per-call costs (two regular expressions and two `Set`s built per call, byte keys joined with commas).
 *
 * The ranks are read from `cl100kBase.bpe_ranks` (lines `! <offset> <base64 token> …`, token i having rank
 * offset + i, as js-tiktoken's constructor reads them) into a `Map` keyed by each token's bytes as a Latin-1 string
 * (one char a byte), so a byte range of a pre-token is a `slice`. The merge is js-tiktoken's `bytePairEncode`: the
 * whole pre-token's rank if it has one; else, from single bytes, repeatedly merge the adjacent pair whose joined bytes
 * have the lowest rank (the leftmost on ties) until no pair has a rank; ids are the parts' ranks. Text becomes bytes
 * by `TextEncoder` (UTF-8; a lone surrogate becomes U+FFFD, as in js-tiktoken). test/chunk/bpe.test.ts checks the ids
 * equal js-tiktoken's on every distinct pre-token of SciFact and the TREC-DL slice and on random strings.
 */
import cl100kBase from 'js-tiktoken/ranks/cl100k_base';

let ranks: Map<string, number> | undefined;

function rankTable(): Map<string, number> {
  if (ranks === undefined) {
    const table = new Map<string, number>();
    for (const line of cl100kBase.bpe_ranks.split('\n')) {
      if (line === '') continue;
      const fields = line.split(' ');
      const offset = Number.parseInt(fields[1]!, 10);
      for (let i = 2; i < fields.length; i++) table.set(Buffer.from(fields[i]!, 'base64').toString('latin1'), offset + i - 2);
    }
    ranks = table;
  }
  return ranks;
}

const encoder = new TextEncoder();

/**
 * Token ids of one pre-token (a match of cl100k's `pat_str`; any string works, encoded as one piece), equal to
 * js-tiktoken's `new Tiktoken(cl100kBase).encode(pre, [], [])` for a pre-token. The ranks (100,256 entries) are loaded
 * on the first call, once per thread. Returns a new array.
 */
export function cl100kEncodePreToken(pre: string): number[] {
  const table = ranks ?? rankTable();
  const utf8 = encoder.encode(pre);
  let bytes = '';
  for (let i = 0; i < utf8.length; i++) bytes += String.fromCharCode(utf8[i]!);
  const whole = table.get(bytes);
  if (whole !== undefined) return [whole];
  // Part p is bytes[bounds[p], bounds[p + 1]).
  const bounds: number[] = [];
  for (let i = 0; i <= bytes.length; i++) bounds.push(i);
  while (bounds.length > 2) {
    let minRank = Infinity;
    let at = -1;
    for (let p = 0; p + 2 < bounds.length; p++) {
      const rank = table.get(bytes.slice(bounds[p]!, bounds[p + 2]!));
      if (rank !== undefined && rank < minRank) {
        minRank = rank;
        at = p;
      }
    }
    if (at < 0) break;
    bounds.splice(at + 1, 1);
  }
  const ids: number[] = [];
  for (let p = 0; p + 1 < bounds.length; p++) {
    const rank = table.get(bytes.slice(bounds[p]!, bounds[p + 1]!));
    if (rank !== undefined) ids.push(rank);
  }
  return ids;
}
