/**
 * A string id → entry number table for corpora of any size (issue 25): V8 caps a `Map` and a `Set` at 2^24
 * (16,777,216) entries ("Map maximum size exceeded"), so a map of document or chunk ids could not hold a larger
 * corpus; and a `Map` of 10 million ids takes about 0.5 GB of heap. Here the ids stay where the caller keeps them
 * (read back through `idAt`); the table is 2^⌈log2 2n⌉ slots (at most half full), placed by FNV-1a (Fowler, Noll &
 * Vo) over the id's UTF-16 code units, with linear probing. A slot is two int32s side by side in one `Int32Array`: the
 * entry number + 1 (0 = empty) and the id's hash. The hash is compared first, so a probe reads a string (through
 * `idAt`) only when the hashes agree, and growing places every entry again by its kept hash without reading an id:
 * at 10M ids the string reads were most of the load's table time (issue 25, session 18). 8 bytes a slot, 16-32 bytes an
 * id (268 MB for 10M ids: 2^25 slots).
 */

/** The id lookups the sweep needs of a document or chunk index (a `ReadonlyMap<string, number>` satisfies it too). */
export interface IdLookup {
  /** The entry number of `id`, undefined when absent. */
  get(id: string): number | undefined;
  has(id: string): boolean;
  /** Ids held. */
  readonly size: number;
}

/** Largest table: 2^30 slots (8 GiB), so at most 2^29 ids. */
const MAX_SLOTS = 2 ** 30;

/** FNV-1a (32-bit) over the UTF-16 code units of `id`, as a signed int32 (what an `Int32Array` holds). */
function fnv1a(id: string): number {
  let h = 0x811c9dc5 | 0;
  for (let j = 0; j < id.length; j++) h = Math.imul(h ^ id.charCodeAt(j), 0x01000193);
  return h;
}

/**
 * The table described in this module's header. Not a `Map`: no iteration, no deletion; entries are numbers the
 * caller gives (typically an array index) and ids are read back through `idAt`. Used for the BM25 build's duplicate-id
 * check, the BEIR loader's ids and the sweep's document index.
 */
export class IdIndex implements IdLookup {
  /** Slot s: `table[2s]` = entry + 1 (0 = empty), `table[2s + 1]` = the id's FNV-1a hash. */
  private table: Int32Array;
  private mask: number;
  private n = 0;
  /** The hash of the id {@link IdIndex.find} last looked for. */
  private hash = 0;

  /**
   * @param idAt the id of entry number i (0 ≤ i < 2^31 − 1): called for an entry on a probed slot whose hash equals
   *   the sought id's, so it must keep returning the id the entry was added under.
   * @param expected ids to make room for at once (≥ 0; the table doubles past it as needed).
   * @throws RangeError when `expected` needs more than 2^30 slots.
   */
  constructor(
    private readonly idAt: (i: number) => string,
    expected = 0,
  ) {
    const cap = IdIndex.slotsFor(expected);
    this.table = new Int32Array(2 * cap);
    this.mask = cap - 1;
  }

  /**
   * The index of `count` entries whose ids are `idAt(0 .. count − 1)`, as `new Map(ids.map((id, i) => [id, i]))`
   * would hold them: an id given twice maps to its last entry.
   */
  static over(count: number, idAt: (i: number) => string): IdIndex {
    const index = new IdIndex(idAt, count);
    for (let i = 0; i < count; i++) index.set(idAt(i), i);
    return index;
  }

  private static slotsFor(ids: number): number {
    let cap = 16;
    while (cap < 2 * ids) cap *= 2;
    if (cap > MAX_SLOTS) throw new RangeError(`IdIndex: ${ids} ids need more than ${MAX_SLOTS} slots (at most ${MAX_SLOTS / 2} ids)`);
    return cap;
  }

  get size(): number {
    return this.n;
  }

  /** The table index (2 × slot) holding `id`, or the empty one where it would go (as its bitwise complement, < 0). */
  private find(id: string): number {
    const { table, mask } = this;
    const h = fnv1a(id);
    this.hash = h;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const at = 2 * slot;
      const e = table[at];
      if (e === 0) return ~at;
      if (table[at + 1] === h && this.idAt(e - 1) === id) return at;
    }
  }

  /**
   * Adds entry `i` under `id` when `id` is absent and returns −1; when present, changes nothing and returns the entry
   * it is held by. `i`: a whole number in [0, 2^31 − 2]; `idAt(i)` must return `id` once the call has returned (the
   * call itself never asks for it, so the caller may store the entry after learning it is new).
   */
  add(id: string, i: number): number {
    const at = this.find(id);
    if (at >= 0) return this.table[at] - 1;
    this.insert(id, ~at, i);
    return -1;
  }

  /** Maps `id` to entry `i`, replacing the entry it was held by, if any (`Map.prototype.set`). */
  set(id: string, i: number): void {
    const at = this.find(id);
    if (at >= 0) this.table[at] = i + 1;
    else this.insert(id, ~at, i);
  }

  get(id: string): number | undefined {
    const at = this.find(id);
    return at >= 0 ? this.table[at] - 1 : undefined;
  }

  has(id: string): boolean {
    return this.find(id) >= 0;
  }

  /** Puts entry `i` of the absent `id` at the empty table index `at`, first growing the table when it would be over half full. */
  private insert(id: string, at: number, i: number): void {
    if (4 * (this.n + 1) > this.table.length) {
      this.grow(this.n + 1);
      at = ~this.find(id);
    }
    this.table[at] = i + 1;
    this.table[at + 1] = this.hash;
    this.n++;
  }

  /** A table for `ids` ids, every entry placed again by its kept hash (no id is read). */
  private grow(ids: number): void {
    const old = this.table;
    const cap = IdIndex.slotsFor(ids);
    const table = new Int32Array(2 * cap);
    const mask = cap - 1;
    for (let at = 0; at < old.length; at += 2) {
      const e = old[at];
      if (e === 0) continue;
      const h = old[at + 1];
      let slot = h & mask;
      while (table[2 * slot] !== 0) slot = (slot + 1) & mask;
      table[2 * slot] = e;
      table[2 * slot + 1] = h;
    }
    this.table = table;
    this.mask = mask;
  }
}
