/**
 * Which ids a chunking knows, and the document of each, without a map entry per chunk (issue 25 item 4).
 *
 * Every chunk the sweep makes has the id `<docId>#<ordinal>` with ordinals 0, 1, 2, … in document order
 * (src/chunk/chunker.ts, src/load/text-store.ts; the chunk checkpoint refuses anything else). So a chunking is known
 * by one number per document, its chunk count, and an id is a chunk of it when the text after its last `#` is a
 * canonical ordinal below that count. The previous form, a `Map` from every chunk id and every document id to a
 * document id (and a `Set` of chunk ids per ranking unit), cost about 2 × 40 bytes an entry per chunking and cannot
 * exceed V8's 2^24 entries (16.7 million): a 10M-document corpus cut into 256-token chunks has 24 million ids.
 *
 * Chunks that do not follow the scheme (none of ours; a caller's hand-made chunk list might) are kept in a small
 * explicit map, so the answers are those of the map form for any input.
 */
import type { Chunk } from '../types.js';
import type { IdLookup } from '../id-index.js';

/** `id → document id` and membership, over a chunking's chunks and the dataset's documents. */
export interface ChunkDocMap {
  /**
   * The document of `id`: for a chunk id of this chunking its `docId`, for a document id the id itself (retrievers may
   * return document ids), else undefined. A chunk id that is also a document id resolves as the chunk (as the map
   * form did: chunks were entered after documents).
   */
  get(id: string): string | undefined;
  /** `get(id) !== undefined`. */
  has(id: string): boolean;
  /** Whether `id` is a chunk of this chunking (not merely a document id). */
  isChunk(id: string): boolean;
  /**
   * Whether at least one chunk of this chunking belongs to the document `docId`: the membership of
   * `new Set(chunks.map((c) => c.docId))` without a set entry per chunk (14 M at 10M documents and 256 tokens).
   */
  hasChunks(docId: string): boolean;
}

/**
 * Whether `id` is `<docId>#<ordinal>` with `ordinal` in canonical decimal (no sign, no leading zero): the scheme of
 * every chunk the sweep makes. Equal to `id === \`${docId}#${ordinal}\`` for a whole number `ordinal` ≥ 0 (false for any
 * other `ordinal`), without building that string: a chunk checkpoint of 14 M chunks checked 14 M ids.
 */
export function isOrdinalId(id: string, docId: string, ordinal: number): boolean {
  if (!Number.isInteger(ordinal) || ordinal < 0) return false;
  const n = docId.length;
  if (id.charCodeAt(n) !== 35 || !id.startsWith(docId)) return false;
  // The digits of `ordinal` from the last, right to left, must end exactly at the `#`.
  let k = id.length - 1;
  let v = ordinal;
  do {
    if (k <= n || id.charCodeAt(k) !== 48 + (v % 10)) return false;
    v = Math.floor(v / 10);
    k--;
  } while (v > 0);
  return k === n;
}

/** The canonical decimal form of a non-negative integer: no sign, no leading zero (but `0`), only digits. */
function parseOrdinal(s: string): number {
  const n = s.length;
  if (n === 0 || n > 9) return -1;
  if (n > 1 && s.charCodeAt(0) === 48) return -1;
  let v = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * Builds the {@link ChunkDocMap} of `chunks` over the documents of `docIndex` (document id → its index in the
 * dataset's document list, 0 ≤ index < `docIndex.size`). Memory: 4 bytes a document, plus an entry per chunk that
 * does not follow the `<docId>#<ordinal>` scheme with contiguous ordinals. O(chunks) time, one id comparison a chunk.
 */
export function chunkDocMap(docIndex: IdLookup, chunks: readonly Chunk[]): ChunkDocMap {
  const counts = new Int32Array(docIndex.size);
  /** Chunks outside the scheme: id → document id. */
  let odd: Map<string, string> | undefined;
  const addOdd = (c: Chunk): void => {
    (odd ??= new Map()).set(c.id, c.docId);
  };
  for (const c of chunks) {
    const d = docIndex.get(c.docId);
    // A chunk whose ordinal is the next of its document and whose id is `<docId>#<ordinal>` is counted; any other
    // (out of order, a gap, a foreign id or document) goes to the explicit map.
    if (d !== undefined && c.ordinal === counts[d] && isOrdinalId(c.id, c.docId, c.ordinal)) {
      counts[d]++;
    } else addOdd(c);
  }
  const chunkDoc = (id: string): string | undefined => {
    const hit = odd?.get(id);
    if (hit !== undefined) return hit;
    const at = id.lastIndexOf('#');
    if (at < 0) return undefined;
    const ordinal = parseOrdinal(id.slice(at + 1));
    if (ordinal < 0) return undefined;
    const docId = id.slice(0, at);
    const d = docIndex.get(docId);
    return d !== undefined && ordinal < counts[d] ? docId : undefined;
  };
  /** The documents of the chunks outside the scheme, built on first use. */
  let oddDocs: Set<string> | undefined;
  return {
    get: (id) => chunkDoc(id) ?? (docIndex.has(id) ? id : undefined),
    has: (id) => chunkDoc(id) !== undefined || docIndex.has(id),
    isChunk: (id) => chunkDoc(id) !== undefined,
    hasChunks: (docId) => {
      const d = docIndex.get(docId);
      if (d !== undefined && counts[d] > 0) return true;
      if (odd === undefined) return false;
      oddDocs ??= new Set(odd.values());
      return oddDocs.has(docId);
    },
  };
}
