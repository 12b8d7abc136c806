/**
 * The dataset's fingerprints (content hashes): of documents and questions, and of the corpus alone. Split out of
 * dataset.ts so that sample.ts (which re-fingerprints a sample) and dataset.ts (which samples) do not import each other.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Doc, Question } from '../types.js';
import { JsonHashWriter } from './json-hash.js';

/**
 * sha256 (hex, 64 characters) over the documents sorted by id (code-unit order) as `(id, text)` and the questions in
 * the given order as `(id, text, relevant, evidence spans, chunk labels)`. Label maps enter with their keys sorted;
 * tags and line numbers do not enter. Each record is one JSON array followed by `\n`, so no two different inputs
 * share a byte stream. Pure: does not change its inputs.
 */
export function fingerprintDataset(docs: readonly Doc[], questions: readonly Question[]): string {
  const h = createHash('sha256');
  hashDocs(h, 'docs\n', docs);
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
  return h.digest('hex');
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
  const byId = (a: Doc, b: Doc): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  let sorted = true;
  for (let i = 1; i < docs.length && sorted; i++) sorted = byId(docs[i - 1], docs[i]) <= 0;
  const sortedDocs = sorted ? docs : [...docs].sort(byId);
  const w = new JsonHashWriter(h);
  w.raw(head);
  for (const d of sortedDocs) {
    w.raw('[');
    w.string(d.id);
    w.raw(',');
    w.string(d.text);
    w.raw(']\n');
  }
  w.flush();
}

function sortedEntries(r: Record<string, number>): [string, number][] {
  return Object.entries(r).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
