/**
 * Writing the embedding's vectors to {@link VectorFile}s when they arrive in an order unrelated to row order (issue 25,
 * docs/scale.md "Vector files written in order (session 12)").
 *
 * The embedding hands over one normalised row per distinct text ("slot"): cache hits in first-seen order, misses
 * longest text first (that order decides batches and cache writes, so it stays). Each slot's vector belongs to its
 * first occurrence's row and to every duplicate row (the same text elsewhere in any group). Two writers:
 *
 * - {@link createPerRowWriter}, the reference (the writer of sessions 8-11): one `pwrite` of 4 · dp bytes per row at a
 *   random offset, then every duplicate row copied with a random read and a random write. At 10M chunks under memory
 *   pressure each such write first read its evicted page back (~110 µs a row).
 * - {@link createOrderedWriter}: a distribution pass. Each file is cut into regions of at most `regionBytes`
 *   (page-aligned: a multiple of 64 rows once a region holds 64 rows or more). A row that arrives (the first row and,
 *   at once, every duplicate row of its slot) is appended, with its row number within the region, to its region's
 *   small buffer; a full buffer is appended to that region's scratch file. {@link SlotRowWriter.finish} then fills
 *   one region buffer per region from its scratch file and buffer, writes it with one positioned write, in file
 *   order, and deletes the scratch file. Every write is an append or a whole region in order; no row is read back.
 *   When everything fits the buffers (small n) no scratch file is made at all.
 *
 * The files hold the same bytes either way (a row put twice keeps the later put in both; a row never put stays zero):
 * test/retrieve/vector-file-writer.test.ts compares them on random orders.
 */
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { tempPathFor } from '../store/temp.js';
import { readFullyAt, writeFullyAt } from '../store/positioned-io.js';
import type { VectorFile } from './vector-file.js';
import type { VectorRows } from './vector-matrix.js';

/**
 * Which rows each distinct text ("slot") fills: the embedding's deduplication (src/embed/embed-texts.ts `dedupe`).
 * Slots are numbered in first-seen order (group by group, row by row), so a slot's first occurrence comes before its
 * duplicates.
 */
export interface SlotLayout {
  /** Distinct texts (slots), ≥ 0. */
  slots: number;
  /** Per group (file), the slot of each row: `where[g].length` is file g's n; values in [0, slots). */
  where: readonly Int32Array[];
  /** Per slot, the group and row of its first occurrence. */
  firstGroup: Int32Array;
  firstRow: Int32Array;
}

/** Puts each slot's row into every row it fills; see the module header. */
export interface SlotRowWriter {
  /** Writes slot s's row (`row`: dp floats, normalised as {@link VectorFile.setRow} does; not kept) to its rows. */
  put(s: number, row: Float32Array): void;
  /** Completes the files (every row put is on disk when it returns); removes the scratch. Call once. */
  finish(): void;
  /** Removes the scratch files (the caller removes the vector files). Idempotent; never throws. */
  discard(): void;
}

/**
 * Copies, in every group g, each row i whose text occurred first elsewhere (`firstGroup[s]`, `firstRow[s]` with
 * s = `where[g][i]`) from that first row: one read and one write per duplicate row, in row order. The in-memory
 * embedding's way of filling duplicates (embed-texts.ts `embedTextsToRows`) and the per-row writer's.
 */
export function copyDuplicateRows(rows: readonly VectorRows[], layout: Pick<SlotLayout, 'where' | 'firstGroup' | 'firstRow'>): void {
  const { where, firstGroup, firstRow } = layout;
  const copy = new Float32Array(rows.length > 0 ? rows[0].dp : 0);
  where.forEach((w, g) =>
    w.forEach((s, i) => {
      if (firstGroup[s] === g && firstRow[s] === i) return;
      rows[firstGroup[s]].readRow(firstRow[s], copy);
      rows[g].writeRow(i, copy);
    }),
  );
}

/**
 * The reference writer (sessions 8-11): `put` writes the first occurrence's row through the file's 1 MiB coalescing
 * buffer (consecutive rows share a write, others are one `pwrite` each); `finish` copies every duplicate row from
 * its first occurrence (one random read and one write each) and flushes. Memory: the files' buffers.
 */
export function createPerRowWriter(files: readonly VectorFile[], layout: SlotLayout): SlotRowWriter {
  const { where, firstGroup, firstRow } = layout;
  return {
    put(s, row) {
      files[firstGroup[s]].writeRow(firstRow[s], row);
    },
    finish() {
      copyDuplicateRows(files, layout);
      for (const f of files) f.flush();
    },
    discard() {},
  };
}

/** Options of {@link createOrderedWriter}. */
export interface OrderedWriteOptions {
  /** Bytes of a region (the rows assembled in memory and written at once), ≥ one row. Default 64 MiB. */
  regionBytes?: number;
  /** Bytes of all regions' append buffers together (each holds at least one row). Default 64 MiB. */
  bufferBytes?: number;
  /**
   * Where the scratch folder goes: `<scratchBase>.parts.tmp-<pid>-<ms>` (src/store/temp.ts's scheme, so a killed run's
   * folder is removed by the next run's `removeDeadTemporaries`). Default: the first file's path without its
   * `.tmp-<pid>-<ms>` suffix. Created only when a buffer first overflows.
   */
  scratchBase?: string;
}

/** Default region size: 64 MiB. */
export const DEFAULT_REGION_BYTES = 64 * 2 ** 20;
/** Default total of the append buffers: 64 MiB. */
export const DEFAULT_BUFFER_BYTES = 64 * 2 ** 20;
/** Bytes of the read buffer of {@link SlotRowWriter.finish} (at most; never more than the largest scratch file). */
const READ_BYTES = 4 * 2 ** 20;

const TEMP_SUFFIX = /\.tmp-\d+-\d+$/;

/**
 * The in-order writer (see the module header) over `files` (created empty by `createVectorFile`, one per group of
 * `layout`, same d). Memory, independent of the number of rows except for the duplicate index: at most `bufferBytes`
 * of append buffers (records of 4 · dp + 4 bytes), one region of at most `regionBytes`, a 4 MiB read buffer, and
 * 4 bytes per row of all files (the slot → duplicate rows index: 4 per slot + 4 per duplicate row). Defaults: about
 * 132 MiB + 4 bytes a row. Scratch on disk: 4 · dp + 4 bytes per row written, each region's part deleted as soon as
 * the region is written (so disk use peaks at about twice the files' size).
 *
 * Throws `HarnessError('EMBEDDING_FAILED')` naming the scratch or vector file when one cannot be written (a full
 * disk: the remedy says to free space or raise `limits.memory`); an Error (a bug in the caller) for files of different
 * strides or a layout that does not match the files.
 */
export function createOrderedWriter(files: readonly VectorFile[], layout: SlotLayout, opts: OrderedWriteOptions = {}): SlotRowWriter {
  const { where, firstGroup, firstRow, slots } = layout;
  if (where.length !== files.length) throw new Error(`ordered writer: ${files.length} files for ${where.length} groups`);
  files.forEach((f, g) => {
    if (f.n !== where[g].length) throw new Error(`ordered writer: file ${f.path} has ${f.n} rows, the layout ${where[g].length}`);
    if (f.dp !== files[0].dp) throw new Error(`ordered writer: file ${f.path} has stride ${f.dp}, ${files[0].path} ${files[0].dp}`);
  });
  const dp = files.length > 0 ? files[0].dp : 16;
  const rowBytes = 4 * dp;
  const rec = dp + 1; // 32-bit words a record: the row within its region, then the row
  const recBytes = 4 * rec;

  // Regions: file by file, `regionRows` rows each (the last of a file shorter); page-aligned once they hold 64 rows.
  let regionRows = Math.max(1, Math.floor((opts.regionBytes ?? DEFAULT_REGION_BYTES) / rowBytes));
  if (regionRows >= 64) regionRows -= regionRows % 64;
  const regionBase = new Int32Array(files.length + 1);
  files.forEach((f, g) => (regionBase[g + 1] = regionBase[g] + Math.ceil(f.n / regionRows)));
  const regions = regionBase[files.length];
  const regionFile = new Int32Array(regions);
  for (let g = 0; g < files.length; g++) regionFile.fill(g, regionBase[g], regionBase[g + 1]);
  const rowsOf = (k: number): number => {
    const g = regionFile[k];
    return Math.min(regionRows, files[g].n - (k - regionBase[g]) * regionRows);
  };

  // Append buffers, one per region, allocated at its first row: `cap` records each (never more than its rows).
  const totalBuffer = opts.bufferBytes ?? DEFAULT_BUFFER_BYTES;
  const capOf = (k: number): number => Math.max(1, Math.min(rowsOf(k), Math.floor(totalBuffer / Math.max(1, regions) / recBytes)));
  const bufWords: (Uint32Array | null)[] = new Array<Uint32Array | null>(regions).fill(null);
  const bufFloats: (Float32Array | null)[] = new Array<Float32Array | null>(regions).fill(null);
  const count = new Int32Array(regions);
  const spilled = new Float64Array(regions); // bytes in region k's scratch file
  const direct = new Int32Array(regions); // rows 0 .. direct[k] − 1 of region k already written to its file in place

  // The duplicate rows of each slot (CSR over global rows = row + the rows of the files before its own).
  const fileStart = new Float64Array(files.length + 1);
  files.forEach((f, g) => (fileStart[g + 1] = fileStart[g] + f.n));
  if (fileStart[files.length] > 0xffffffff) throw new Error(`ordered writer: ${fileStart[files.length]} rows (at most 2^32 − 1)`);
  const dupStart = new Int32Array(slots + 1);
  for (let g = 0; g < where.length; g++) {
    const w = where[g];
    for (let i = 0; i < w.length; i++) if (firstGroup[w[i]] !== g || firstRow[w[i]] !== i) dupStart[w[i] + 1]++;
  }
  for (let s = 0; s < slots; s++) dupStart[s + 1] += dupStart[s];
  const dupRows = new Uint32Array(dupStart[slots]);
  {
    const fill = dupStart.slice(0, slots);
    for (let g = 0; g < where.length; g++) {
      const w = where[g];
      for (let i = 0; i < w.length; i++) if (firstGroup[w[i]] !== g || firstRow[w[i]] !== i) dupRows[fill[w[i]]++] = fileStart[g] + i;
    }
  }

  let scratch: string | null = null;
  const scratchDir = (): string => {
    if (scratch === null) {
      const base = opts.scratchBase ?? (files.length > 0 ? files[0].path.replace(TEMP_SUFFIX, '') : 'vectors');
      const dir = tempPathFor(`${base}.parts`);
      try {
        mkdirSync(dir, { recursive: true });
      } catch (e) {
        throw writeError(dir, e);
      }
      scratch = dir;
    }
    return scratch;
  };
  const partOf = (k: number): string => path.join(scratchDir(), `${k}`);

  const firstOf = (k: number): number => (k - regionBase[regionFile[k]]) * regionRows;

  /**
   * Writes region k's buffered records in place in the file when, with nothing spilled yet, they are exactly the
   * rows that continue the region's in-place prefix, in order (rows arriving in row order: a warm cache's hits), the
   * records compacted to rows within the buffer. True when it did (the buffer is then empty).
   */
  const inPlace = (k: number): boolean => {
    const words = bufWords[k] as Uint32Array;
    if (spilled[k] > 0) return false;
    const n = count[k];
    for (let j = 0; j < n; j++) if (words[j * rec] !== direct[k] + j) return false;
    const floats = bufFloats[k] as Float32Array;
    for (let r = 0; r < n; r++) floats.copyWithin(r * dp, r * rec + 1, r * rec + rec);
    files[regionFile[k]].writeRows(firstOf(k) + direct[k], n, floats);
    direct[k] += n;
    count[k] = 0;
    return true;
  };

  const spill = (k: number): void => {
    const words = bufWords[k] as Uint32Array;
    const file = partOf(k);
    let fd: number | undefined;
    try {
      fd = openSync(file, spilled[k] === 0 ? 'w' : 'r+');
    } catch (e) {
      throw writeError(file, e);
    }
    try {
      const bytes = count[k] * recBytes;
      writeFullyAt(fd, new Uint8Array(words.buffer, 0, bytes), spilled[k], (e) => writeError(file, e));
      spilled[k] += bytes;
      count[k] = 0;
    } finally {
      closeSync(fd);
    }
  };

  const putRow = (g: number, i: number, row: Float32Array): void => {
    const k = regionBase[g] + Math.floor(i / regionRows);
    let words = bufWords[k];
    if (words === null) {
      const buf = new ArrayBuffer(capOf(k) * recBytes);
      words = bufWords[k] = new Uint32Array(buf);
      bufFloats[k] = new Float32Array(buf);
    } else if (count[k] * rec === words.length && !inPlace(k)) spill(k);
    const o = count[k]++ * rec;
    words[o] = i - (k - regionBase[g]) * regionRows;
    (bufFloats[k] as Float32Array).set(row.subarray(0, dp), o + 1);
  };

  let finished = false;
  const writer: SlotRowWriter = {
    put(s, row) {
      if (finished) throw new Error('ordered writer: put after finish');
      putRow(firstGroup[s], firstRow[s], row);
      for (let j = dupStart[s]; j < dupStart[s + 1]; j++) {
        const r = dupRows[j];
        let g = 0;
        while (r >= fileStart[g + 1]) g++;
        putRow(g, r - fileStart[g], row);
      }
    },
    finish() {
      if (finished) throw new Error('ordered writer: finish called twice');
      finished = true;
      let largest = 0;
      let largestSpill = 0;
      for (let k = 0; k < regions; k++) {
        largest = Math.max(largest, rowsOf(k));
        largestSpill = Math.max(largestSpill, spilled[k]);
      }
      const region = new Float32Array(largest * dp);
      const readBuf = largestSpill > 0 ? new ArrayBuffer(Math.min(largestSpill, Math.max(recBytes, READ_BYTES - (READ_BYTES % recBytes)))) : null;
      const place = (words: Uint32Array, floats: Float32Array, records: number): void => {
        for (let j = 0, o = 0; j < records; j++, o += rec) region.set(floats.subarray(o + 1, o + rec), words[o] * dp);
      };
      for (let k = 0; k < regions; k++) {
        const rows = rowsOf(k);
        const g = regionFile[k];
        if (count[k] > 0) inPlace(k);
        // nothing left to write: the region is in its file already, or no row of it was put (zeros, as created)
        if (spilled[k] === 0 && count[k] === 0) continue;
        // the rows written in place first (the records left were all put after them), then the records over them
        region.fill(0, 0, rows * dp);
        if (direct[k] > 0) files[g].readRows(firstOf(k), direct[k], region);
        if (spilled[k] > 0) {
          const file = partOf(k);
          let fd: number;
          try {
            fd = openSync(file, 'r');
          } catch (e) {
            throw new HarnessError('EMBEDDING_FAILED', `cannot read the scratch file ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
              location: { file },
              remedy: 'the file was removed while the sweep ran (another process cleaning the cache folder?); run the sweep again',
              cause: e,
            });
          }
          try {
            const bytes = readBuf as ArrayBuffer;
            const words = new Uint32Array(bytes);
            const floats = new Float32Array(bytes);
            const into = new Uint8Array(bytes);
            for (let at = 0; at < spilled[k]; ) {
              const n = Math.min(bytes.byteLength, spilled[k] - at);
              readFullyAt(fd, into, 0, n, at, (end) =>
                new HarnessError('EMBEDDING_FAILED', `the scratch file ${file} ended at byte ${end}, expected ${spilled[k]}`, {
                  location: { file },
                  remedy: 'the file was changed or removed while the sweep ran; run the sweep again',
                }));
              place(words, floats, n / recBytes);
              at += n;
            }
          } finally {
            closeSync(fd);
          }
          rmSync(file, { force: true });
          spilled[k] = 0;
        }
        if (bufWords[k] !== null) place(bufWords[k] as Uint32Array, bufFloats[k] as Float32Array, count[k]);
        bufWords[k] = null;
        bufFloats[k] = null;
        count[k] = 0;
        files[g].writeRows(firstOf(k), rows, region);
      }
      writer.discard();
    },
    discard() {
      bufWords.fill(null);
      bufFloats.fill(null);
      if (scratch !== null) {
        try {
          rmSync(scratch, { recursive: true, force: true });
        } catch {
          /* left for the next run's sweep of dead temporaries */
        }
        scratch = null;
      }
    },
  };
  return writer;
}

function writeError(file: string, e: unknown): HarnessError {
  return new HarnessError('EMBEDDING_FAILED', `cannot write vectors to ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, {
    location: { file },
    remedy:
      'free disk space in the cache folder (while they are written, the vectors take 4 · chunks · d bytes in their files and about as much again in scratch parts), or raise limits.memory so the vectors stay in memory',
    cause: e,
  });
}
