/**
 * The compact serving index (buildKeywordIndex) against its reference, wink-bm25-text-search's own search through the
 * same analyser (buildWinkKeywordIndex), on real data: every query of SciFact (whole documents, title + "\n\n" + text
 * as loadBeir builds them) and of TREC-DL 2019 (5k passages), at depth 100. Rankings must be identical (ids in order)
 * and scores equal; the two engines run the same floating-point operations in the same order, so "within 1e-9" is
 * checked and, more strictly, bit equality. The index as the sweep builds it (buildKeywordIndexParallel: the analysis
 * on 2 worker threads, here in 64 KiB batches so both workers get many), searched in blocks of 1,000 chunks (so the
 * blocked search crosses block boundaries 5 times), is checked against wink the same way.
 * Skipped when ../shared/datasets is absent.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadBeir } from '../../src/load/beir.js';
import { buildKeywordIndex, buildKeywordIndexParallel, buildWinkKeywordIndex, COMPACT_ENGINE, type KeywordIndex } from '../../src/retrieve/bm25.js';
import type { Chunk, Hit } from '../../src/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const datasets = path.resolve(here, '../../../shared/datasets');
const DEPTH = 100;

/** Every query text of `<root>/queries.jsonl` (all splits, not only the judged ones). */
function allQueries(root: string): { id: string; text: string }[] {
  return readFileSync(path.join(root, 'queries.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const q = JSON.parse(l) as { _id: string; text: string };
      return { id: q._id, text: q.text };
    });
}

/** Whole-document chunks `<docId>#0`, as chunking `none` makes them. */
async function wholeDocChunks(root: string, split: string): Promise<Chunk[]> {
  const { docs } = await loadBeir(root, split);
  return docs.map((d) => ({ id: `${d.id}#0`, docId: d.id, ordinal: 0, text: d.text, start: 0, end: d.text.length, tokens: 0 }));
}

/**
 * Compares our index, built on this thread and on 2 worker threads, with wink on every query; returns the number of
 * hits compared.
 */
async function compareAll(chunks: Chunk[], queries: { id: string; text: string }[]): Promise<{ hits: number; queries: number }> {
  const ours = buildKeywordIndex(chunks);
  const threaded = await buildKeywordIndexParallel(chunks, {}, { threads: 2, inProcessChars: 0, batchChars: 64 * 1024, searchBlockDocs: 1000 });
  const wink = buildWinkKeywordIndex(chunks);
  expect(ours.params.engine).toBe(COMPACT_ENGINE);
  expect(threaded.params.engine).toBe(COMPACT_ENGINE);
  expect(wink.params.engine).toMatch(/^wink-bm25-text-search /);
  let hits = 0;
  const mismatches: string[] = [];
  for (const q of queries) {
    const b: Hit[] = wink.search(q.text, DEPTH);
    hits += b.length;
    for (const [name, index] of [['ours', ours], ['2 threads, blocks of 1000', threaded]] as [string, KeywordIndex][]) {
      const a: Hit[] = index.search(q.text, DEPTH);
      const sameIds = a.length === b.length && a.every((h, i) => h.id === b[i].id);
      const close = sameIds && a.every((h, i) => Math.abs(h.score - b[i].score) <= 1e-9);
      const bits = sameIds && a.every((h, i) => Object.is(h.score, b[i].score));
      if (!sameIds || !close || !bits) mismatches.push(`${name}: ${q.id} (${sameIds ? (close ? 'score bits' : 'scores') : 'ranking'})`);
    }
  }
  expect(mismatches).toEqual([]);
  return { hits, queries: queries.length };
}

describe.skipIf(!existsSync(path.join(datasets, 'scifact')))('parity with wink: SciFact, whole documents, every query', () => {
  it('identical rankings and equal scores at depth 100 for all 1,109 queries', async () => {
    const root = path.join(datasets, 'scifact');
    const chunks = await wholeDocChunks(root, 'test');
    const queries = allQueries(root);
    expect(chunks).toHaveLength(5183);
    expect(queries).toHaveLength(1109);
    const { hits } = await compareAll(chunks, queries);
    expect(hits).toBeGreaterThan(1109 * 50); // most queries fill depth 100: the comparison is not vacuous
  }, 120_000);
});

describe.skipIf(!existsSync(path.join(datasets, 'trec-dl-2019-5k')))('parity with wink: TREC-DL 2019 5k passages, every query', () => {
  it('identical rankings and equal scores at depth 100 for all queries', async () => {
    const root = path.join(datasets, 'trec-dl-2019-5k');
    const chunks = await wholeDocChunks(root, 'test');
    const queries = allQueries(root);
    expect(chunks).toHaveLength(5000);
    const { hits } = await compareAll(chunks, queries);
    expect(hits).toBeGreaterThan(queries.length * 50);
  }, 120_000);
});
