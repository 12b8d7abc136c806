/**
 * A string id → entry number table for corpora of any size (issue 25): V8 caps a `Map` and a `Set` at 2^24
 * (16,777,216) entries ("Map maximum size exceeded"), so a map of document or chunk ids could not hold a larger
 * corpus; and a `Map` of 10 million ids takes about 0.5 GB of heap. Here the ids stay where the caller keeps them
 * (read back through `idAt`); the table is an `Int32Array` of entry numbers + 1 (0 = empty), 2^⌈log2 2n⌉ slots (at
 * most half full), placed by FNV-1a (Fowler, Noll & Vo) over the id's UTF-16 code units, with linear probing and ids
 * compared as strings on an occupied slot: 4-8 bytes an id.
 */

/** The id lookups the sweep needs of a document or chunk index (a `ReadonlyMap<string, number>` satisfies it too). */
export interface IdLookup {
  /** The entry number of `id`, undefined when absent. */
  get(id: string): number | undefined;
  has(id: string): boolean;
  /** Ids held. */
  readonly size: number;
}

/** Largest table: 2^30 slots (4 GiB), so at most 2^29 ids. */
const MAX_SLOTS = 2 ** 30;

/** FNV-1a (32-bit) over the UTF-16 code units of `id`. */
function fnv1a(id: string): number {
  let h = 0x811c9dc5;
  for (let j = 0; j < id.length; j++) h = Math.imul(h ^ id.charCodeAt(j), 0x01000193);
  return h;
}

/**
 * The table described in this module's header. Not a `Map`: no iteration, no deletion; entries are numbers the
 * caller gives (typically an array index) and ids are read back through `idAt`. Used for the BM25 build's duplicate-id
 * check, the BEIR loader's ids and the sweep's document index.
 */
export class IdIndex implements IdLookup {
  private table: Int32Array;
  private mask: number;
  private n = 0;

  /**
   * @param idAt the id of entry number i (0 ≤ i < 2^31 − 1): called for the entries on a probed slot and when the
   *   table grows, so it must keep returning the id the entry was added under.
   * @param expected ids to make room for at once (≥ 0; the table doubles past it as needed).
   * @throws RangeError when `expected` needs more than 2^30 slots.
   */
  constructor(
    private readonly idAt: (i: number) => string,
    expected = 0,
  ) {
    const cap = IdIndex.slotsFor(expected);
    this.table = new Int32Array(cap);
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

  /** The slot holding `id`, or the empty slot where it would go (as its bitwise complement, < 0). */
  private find(id: string): number {
    const { table, mask } = this;
    for (let slot = fnv1a(id) & mask; ; slot = (slot + 1) & mask) {
      const e = table[slot];
      if (e === 0) return ~slot;
      if (this.idAt(e - 1) === id) return slot;
    }
  }

  /**
   * Adds entry `i` under `id` when `id` is absent and returns −1; when present, changes nothing and returns the entry
   * it is held by. `i`: a whole number in [0, 2^31 − 2]; `idAt(i)` must return `id` once the call has returned (the
   * call itself never asks for it, so the caller may store the entry after learning it is new).
   */
  add(id: string, i: number): number {
    const slot = this.find(id);
    if (slot >= 0) return this.table[slot] - 1;
    this.insert(id, ~slot, i);
    return -1;
  }

  /** Maps `id` to entry `i`, replacing the entry it was held by, if any (`Map.prototype.set`). */
  set(id: string, i: number): void {
    const slot = this.find(id);
    if (slot >= 0) this.table[slot] = i + 1;
    else this.insert(id, ~slot, i);
  }

  get(id: string): number | undefined {
    const slot = this.find(id);
    return slot >= 0 ? this.table[slot] - 1 : undefined;
  }

  has(id: string): boolean {
    return this.find(id) >= 0;
  }

  /** Puts entry `i` of the absent `id` in the empty `slot`, first growing the table when it would be over half full. */
  private insert(id: string, slot: number, i: number): void {
    if (2 * (this.n + 1) > this.table.length) {
      this.grow(this.n + 1);
      slot = ~this.find(id);
    }
    this.table[slot] = i + 1;
    this.n++;
  }

  /** A table for `ids` ids, every entry placed again by its id's hash (the ids of the entries held only). */
  private grow(ids: number): void {
    const old = this.table;
    const cap = IdIndex.slotsFor(ids);
    const table = new Int32Array(cap);
    const mask = cap - 1;
    for (let s = 0; s < old.length; s++) {
      const e = old[s];
      if (e === 0) continue;
      let slot = fnv1a(this.idAt(e - 1)) & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = e;
    }
    this.table = table;
    this.mask = mask;
  }
}
