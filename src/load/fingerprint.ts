/**
 * The dataset's fingerprints (content hashes): of documents and questions, and of the corpus alone. Split out of
 * dataset.ts so that sample.ts (which re-fingerprints a sample) and dataset.ts (which samples) do not import each other.
 *
 * {@link fingerprintDataset} and {@link fingerprintCorpus} are the definitions (the reference). The loaders compute
 * both values without reading the documents twice (issue 25: at 10M documents each pass read 13.6 GB of stored text
 * back from disk): {@link StreamingFingerprints} while the corpus streams, when it arrives in id order, else
 * {@link fingerprintBoth} in one pass; the result is carried as `Dataset.fingerprint` and `Dataset.corpusFingerprint`.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Dataset, Doc, Question } from '../types.js';
import { JsonHashWriter, type ByteSink } from './json-hash.js';
import { inTextStore, textLength, textPosition } from './text-store.js';

/**
 * sha256 (hex, 64 characters) over the documents sorted by id (code-unit order) as `(id, text)` and the questions in
 * the given order as `(id, text, relevant, evidence spans, chunk labels)`. Label maps enter with their keys sorted;
 * tags and line numbers do not enter. Each record is one JSON array followed by `\n`, so no two different inputs
 * share a byte stream. Pure: does not change its inputs.
 */
export function fingerprintDataset(docs: readonly Doc[], questions: readonly Question[]): string {
  const h = createHash('sha256');
  hashDocs(h, 'docs\n', docs);
  hashQuestions(h, questions);
  return h.digest('hex');
}

/** Feeds `h` the questions part of {@link fingerprintDataset}: the line `questions\n`, then one record a question. */
function hashQuestions(h: Hash, questions: readonly Question[]): void {
  h.update('questions\n');
  for (const q of questions) {
    h.update(
      `${JSON.stringify([
        q.id,
        q.text,
        sortedEntries(q.relevant),
        q.evidence.map((s) => [s.doc, s.start, s.end, s.grade]),
        q.chunkLabels === undefined ? null : sortedEntries(q.chunkLabels),
      ])}\n`,
    );
  }
}

/**
 * sha256 (hex, 64 characters) over the documents only: sorted by id (code-unit order), one JSON record
 * `["<id>","<text>"]\n` each after the line `corpus\n` (so it never equals a {@link fingerprintDataset} value). No
 * question, label or evidence enters, so labelling a dataset does not change it: the pool file
 * (src/label/formats.ts `PoolHeader.dataset.corpus`) and the ranking checkpoints (src/run/checkpoint.ts) key on it.
 * Pure: does not change its input.
 */
export function fingerprintCorpus(docs: readonly Doc[]): string {
  const h = createHash('sha256');
  hashDocs(h, 'corpus\n', docs);
  return h.digest('hex');
}

/**
 * Feeds `h` the line `head`, then per document sorted by id (code-unit order) the bytes of
 * `${JSON.stringify([d.id, d.text])}\n`, without building those strings (json-hash.ts). Sorts a copy only when
 * `docs` is not already in order.
 */
function hashDocs(h: Hash, head: string, docs: readonly Doc[]): void {
  h.update(head);
  const w = new JsonHashWriter(h);
  for (const d of sortedById(docs)) writeRecord(w, d.id, d.text);
  w.flush();
}

/** `docs` when already sorted by id (code-unit order), else a sorted copy. Never reads a text. */
function sortedById(docs: readonly Doc[]): readonly Doc[] {
  const byId = (a: Doc, b: Doc): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  let sorted = true;
  for (let i = 1; i < docs.length && sorted; i++) sorted = byId(docs[i - 1], docs[i]) <= 0;
  return sorted ? docs : [...docs].sort(byId);
}

/** Writes one document record, the bytes of `${JSON.stringify([id, text])}\n`. */
function writeRecord(w: JsonHashWriter, id: string, text: string): void {
  w.raw('[');
  w.string(id);
  w.raw(',');
  w.string(text);
  w.raw(']\n');
}

/** Both fingerprints of a dataset: `fingerprint` = {@link fingerprintDataset}, `corpusFingerprint` = {@link fingerprintCorpus}. */
export interface DatasetFingerprints {
  /** {@link fingerprintDataset}`(docs, questions)`: sha256 hex, 64 characters. */
  fingerprint: string;
  /** {@link fingerprintCorpus}`(docs)`: sha256 hex, 64 characters. */
  corpusFingerprint: string;
}

/**
 * The document records fed to two hashes side by side: `docs\n…` (the dataset fingerprint's prefix) and `corpus\n…`
 * (the corpus fingerprint). Each record is escaped once ({@link JsonHashWriter}) and the same bytes go to both.
 */
class TwinDocHash {
  readonly dataset = createHash('sha256').update('docs\n');
  readonly corpus = createHash('sha256').update('corpus\n');
  readonly writer: JsonHashWriter;

  constructor() {
    const { dataset, corpus } = this;
    const both: ByteSink = {
      update(bytes: Uint8Array): void {
        dataset.update(bytes);
        corpus.update(bytes);
      },
    };
    this.writer = new JsonHashWriter(both);
  }

  /** Ends the document part, adds the questions and returns both hex digests. Call once. */
  finish(questions: readonly Question[]): DatasetFingerprints {
    this.writer.flush();
    hashQuestions(this.dataset, questions);
    return { fingerprint: this.dataset.digest('hex'), corpusFingerprint: this.corpus.digest('hex') };
  }
}

/**
 * {@link fingerprintDataset}`(docs, questions)` and {@link fingerprintCorpus}`(docs)` in one pass over `docs`: each
 * text is read once (a stored document's text is one read from its text store, not two) and escaped once. Equal to the
 * two reference functions for every input (test/load/fingerprint-stream.test.ts). Pure: does not change its inputs.
 */
export function fingerprintBoth(docs: readonly Doc[], questions: readonly Question[]): DatasetFingerprints {
  const twin = new TwinDocHash();
  for (const d of sortedById(docs)) writeRecord(twin.writer, d.id, d.text);
  return twin.finish(questions);
}

/** Code units of text {@link fingerprintBothAsync} hashes between two yields to the event loop by default: 2^25 (32 Mi). */
export const FINGERPRINT_YIELD_UNITS = 1 << 25;

/**
 * Code units of stored text {@link fingerprintBothAsync} reads at a time, by default: 2^23 (8 Mi, at most 16 MiB of
 * strings held). A batch holds at least one document, however long.
 */
export const FINGERPRINT_BATCH_UNITS = 1 << 23;

/**
 * {@link fingerprintBoth}, yielding to the event loop (`setImmediate`) after every `yieldEveryUnits` code units of text
 * hashed, so timers (the load heartbeat, src/run/front.ts) keep running during a pass over millions of stored texts
 * (issue 25: at 10M documents the passes were minutes of silence). Same values as {@link fingerprintBoth}; the
 * documents must not change until the promise settles.
 *
 * Stored texts are read in batches of consecutive documents in id order (up to `batchUnits` code units each), and
 * within a batch in the order of their place in the text store, then hashed in id order. A corpus whose file is not in
 * id order (the bench corpora: `syn10` after `syn9`) then reads its store as a few forward walks per batch, served by
 * the store's read-ahead window, instead of one positioned read per document (10 million at 10M documents, and a
 * random disk read for each text the page cache no longer held). Each text is still read exactly once.
 * @param yieldEveryUnits code units between yields, an integer ≥ 1; default {@link FINGERPRINT_YIELD_UNITS}.
 * @param batchUnits code units of stored text read per batch, an integer ≥ 1; default {@link FINGERPRINT_BATCH_UNITS}.
 * @throws RangeError for a `yieldEveryUnits` or `batchUnits` that is not an integer ≥ 1.
 */
export async function fingerprintBothAsync(
  docs: readonly Doc[],
  questions: readonly Question[],
  yieldEveryUnits = FINGERPRINT_YIELD_UNITS,
  batchUnits = FINGERPRINT_BATCH_UNITS,
): Promise<DatasetFingerprints> {
  if (!Number.isInteger(yieldEveryUnits) || yieldEveryUnits < 1) throw new RangeError(`yieldEveryUnits must be an integer >= 1, got ${yieldEveryUnits}`);
  if (!Number.isInteger(batchUnits) || batchUnits < 1) throw new RangeError(`batchUnits must be an integer >= 1, got ${batchUnits}`);
  const twin = new TwinDocHash();
  const sorted = sortedById(docs);
  let since = 0;
  for (let from = 0; from < sorted.length; ) {
    // a run of stored documents up to batchUnits code units (at least one), or one resident document
    let to = from + 1;
    let texts: string[];
    if (inTextStore(sorted[from])) {
      let units = textLength(sorted[from]);
      while (to < sorted.length && inTextStore(sorted[to]) && units + textLength(sorted[to]) <= batchUnits) units += textLength(sorted[to++]);
      texts = storedTextsInFileOrder(sorted, from, to);
    } else texts = [sorted[from].text];
    for (let i = from; i < to; i++) {
      const text = texts[i - from];
      writeRecord(twin.writer, sorted[i].id, text);
      since += text.length;
      if (since >= yieldEveryUnits) {
        since = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    from = to;
  }
  return twin.finish(questions);
}

/**
 * The texts of the stored documents `docs[from .. to)`, aligned with them, each read once, in the order of their
 * place in the text store ({@link textPosition}), so that the reads walk the file forwards.
 */
function storedTextsInFileOrder(docs: readonly Doc[], from: number, to: number): string[] {
  const texts = new Array<string>(to - from);
  const at = new Float64Array(to - from);
  for (let i = from; i < to; i++) at[i - from] = textPosition(docs[i]);
  const order = new Uint32Array(to - from).map((_, k) => k).sort((a, b) => at[a] - at[b]);
  for (const k of order) texts[k] = docs[from + k].text;
  return texts;
}

/**
 * Both fingerprints computed while a loader streams the corpus, each document's text hashed when it arrives, so no
 * later pass reads the texts back (issue 25: a text store at 10M documents holds 13.6 GB). This works only when the
 * distinct documents arrive in strictly increasing id order (code-unit order), since the fingerprints hash the
 * documents sorted by id and a sha256 cannot take bytes out of order. At the first document whose id is not greater
 * than the previous one's, the hashes are dropped ({@link StreamingFingerprints.inOrder} turns false for good) and
 * {@link StreamingFingerprints.finish} returns undefined: the caller then computes {@link fingerprintBoth} (or
 * {@link fingerprintBothAsync}) over the
 * sorted documents (one pass). A document that arrives out of order must be hashed before documents already hashed,
 * and its text (or theirs) would have to be kept in memory or read back: the pass is the exact, bounded fallback.
 *
 * Usage: `add(id, text)` once per distinct document in arrival order (a collapsed duplicate is not added again), then
 * `finish(questions)` once.
 */
export class StreamingFingerprints {
  private twin: TwinDocHash | undefined = new TwinDocHash();
  private last: string | undefined;
  private added = 0;
  private finished = false;

  /** False once a document arrived out of id order (then nothing more is hashed). */
  get inOrder(): boolean {
    return this.twin !== undefined;
  }

  /** Distinct documents added so far (out of order ones included). */
  get documents(): number {
    return this.added;
  }

  /** Hashes the record of document `id` with `text` when the order still holds; else only counts it. */
  add(id: string, text: string): void {
    this.added++;
    if (this.twin === undefined) return;
    if (this.last !== undefined && !(this.last < id)) {
      this.twin = undefined; // out of order: the caller falls back to fingerprintBoth
      return;
    }
    this.last = id;
    writeRecord(this.twin.writer, id, text);
  }

  /**
   * Both fingerprints of the documents added and `questions`, or undefined when they did not arrive in id order.
   * @throws Error when called twice.
   */
  finish(questions: readonly Question[]): DatasetFingerprints | undefined {
    if (this.finished) throw new Error('StreamingFingerprints.finish called twice');
    this.finished = true;
    const twin = this.twin;
    this.twin = undefined;
    return twin?.finish(questions);
  }
}

/**
 * The corpus fingerprint of a dataset: the one its loader computed (`Dataset.corpusFingerprint`) when present, else
 * {@link fingerprintCorpus}`(dataset.docs)` (a `Dataset` built by hand, e.g. in tests or library use). Whoever builds
 * a dataset with other documents from a loaded one must set or drop `corpusFingerprint` (sample.ts sets it).
 */
export function corpusFingerprintOf(dataset: Pick<Dataset, 'docs' | 'corpusFingerprint'>): string {
  return dataset.corpusFingerprint ?? fingerprintCorpus(dataset.docs);
}

function sortedEntries(r: Record<string, number>): [string, number][] {
  return Object.entries(r).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
