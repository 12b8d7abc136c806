/** A tiny folder dataset and a pool over it, for the label server tests. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writePool, type PoolPair } from '../../src/label/formats.js';
import { fingerprintCorpus } from '../../src/load/dataset.js';

/** Passage text that must show as text and never run. */
export const INJECTION = 'Note <img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script> end.';

export const DOCS: Record<string, string> = {
  'a.md': 'Refunds take 5 to 10 business days after the return arrives.',
  'b.md': 'Shipping to islands is not possible; refunds for island orders take longer.',
  'c.md': 'Warranty claims need the receipt and the serial number.',
  'inj.md': INJECTION,
};

/** Writes the dataset (docs/ + questions.jsonl) and a pool of `pairs` (qid, doc) in that order; returns paths. */
export function labelFixture(pairs: [string, string][], corpus?: string): { dir: string; labels: string; pool: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-label-'));
  mkdirSync(path.join(dir, 'ds', 'docs'), { recursive: true });
  for (const [id, text] of Object.entries(DOCS)) writeFileSync(path.join(dir, 'ds', 'docs', id), text);
  const labels = path.join(dir, 'ds', 'questions.jsonl');
  writeFileSync(
    labels,
    '{"id": "q1", "question": "How long do refunds take?", "relevant": {"a.md": 3}}\n' +
      '{"id": "q2", "question": "Do you ship to islands?", "relevant": {"b.md": 3}}\n',
  );
  const questions: Record<string, string> = { q1: 'How long do refunds take?', q2: 'Do you ship to islands?' };
  const body: PoolPair[] = pairs.map(([qid, doc], i) => ({
    pair: i + 1, qid, question: questions[qid], doc, start: 0, end: DOCS[doc].length, passage: DOCS[doc], rows: ['none.keyword.k10'], bestRank: i + 1, docChars: DOCS[doc].length,
  }));
  const pool = path.join(dir, 'pool.jsonl');
  const docs = Object.entries(DOCS).map(([id, text]) => ({ id, text }));
  writePool(
    pool,
    {
      format: 'retrieval-sweep.pool', version: 1,
      dataset: { name: 'ds', root: path.join(dir, 'ds'), corpus: corpus ?? fingerprintCorpus(docs) },
      results: path.join(dir, 'results'), level: 'document', depth: 10, rows: ['none.keyword.k10'], pairs: body.length, threshold: 1, sweepLevel: 'document',
    },
    body,
  );
  return { dir, labels, pool };
}
