/**
 * The rerank stage end to end in a sweep (issue 14 §2), on the tiny cross-encoder our script builds: reranked rows
 * carry the reranker and depth in their id, their top `depth` is the base list reordered by the model's scores (ties by
 * the one rule), the rest stays below in order, and a warm rerun scores no pair.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { createReranker } from '../../src/rerank/registry.js';
import { resolveRerankSpec } from '../../src/rerank/spec.js';
import { rankByRule } from '../../src/retrieve/rank.js';
import type { SweepResult } from '../../src/types.js';
import { buildTinyCrossEncoder } from '../../scripts/build-tiny-model.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');

describe('a sweep with a rerank stage on the tiny cross-encoder', () => {
  let modelDir: string;
  let cacheDir: string;
  let first: SweepResult;
  const configOf = () =>
    parseConfig({
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      cacheDir,
      rerank: ['none', { model: `transformers:${modelDir}`, label: 'ce', depth: [2, 3] }],
    });
  beforeAll(async () => {
    modelDir = (await buildTinyCrossEncoder(path.join(mkdtempSync(path.join(tmpdir(), 'rs-ce-')), 'tiny-ce'))).dir;
    cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-ce-cache-')), 'c');
    ({ result: first } = await runSweep(configOf(), { resume: false }));
  }, 300_000);

  it('adds rows with the reranker and depth in the id, after each plain row family', () => {
    expect(first.configs.map((c) => c.config.id)).toEqual([
      'none.keyword.k1',
      'none.keyword.k3',
      'none.keyword.rr-ce-d2.k1',
      'none.keyword.rr-ce-d2.k3',
      'none.keyword.rr-ce-d3.k1',
      'none.keyword.rr-ce-d3.k3',
      'cs16-ov4.keyword.k1',
      'cs16-ov4.keyword.k3',
      'cs16-ov4.keyword.rr-ce-d2.k1',
      'cs16-ov4.keyword.rr-ce-d2.k3',
      'cs16-ov4.keyword.rr-ce-d3.k1',
      'cs16-ov4.keyword.rr-ce-d3.k3',
    ]);
    expect(first.configs.every((c) => c.status === 'ok')).toBe(true);
    expect(first.configs.find((c) => c.config.id === 'none.keyword.rr-ce-d2.k3')!.config.rerank).toEqual({ label: 'ce', model: `transformers:${modelDir}`, depth: 2 });
  });

  it('the top depth is the base list reordered by the model (question first), the rest below in order', async () => {
    const reranker = await createReranker(resolveRerankSpec({ model: `transformers:${modelDir}`, depth: 2 })!, { cacheDir });
    try {
      for (const ck of ['none', 'cs16-ov4']) {
        const base = first.configs.find((c) => c.config.id === `${ck}.keyword.k3`)!;
        const reranked = first.configs.find((c) => c.config.id === `${ck}.keyword.rr-ce-d2.k3`)!;
        for (const [j, q] of base.perQuery.entries()) {
          const question = first.questions.find((x) => x.id === q.qid)!;
          const head = q.retrieved.slice(0, 2);
          const texts = head.map((h) => chunkTexts.get(`${ck}/${h.chunkId}`)!);
          const scores = await reranker.score(question.text, texts);
          const expected = rankByRule(head.map((h, i) => ({ id: h.chunkId, score: scores[i] }))).map((h) => h.id);
          expect(reranked.perQuery[j].retrieved.slice(0, head.length).map((r) => r.chunkId)).toEqual(expected);
          expect(reranked.perQuery[j].retrieved.slice(2).map((r) => r.chunkId)).toEqual(q.retrieved.slice(2).map((r) => r.chunkId));
        }
      }
    } finally {
      await reranker.close();
    }
  });

  it('a warm rerun scores no pair (every pair comes from rerank.sqlite)', async () => {
    const { result } = await runSweep(configOf(), { resume: false });
    const info = (result.manifest.rerankers as { pairs_scored: number; pairs: number }[])[0];
    expect(info.pairs).toBeGreaterThan(0);
    expect(info.pairs_scored).toBe(0);
    for (const row of first.configs) expect(result.configs.find((c) => c.config.id === row.config.id)!.means).toEqual(row.means);
  });
});

/** Chunk texts by `<chunking key>/<chunk id>`, from the same loader and chunker the sweep uses. */
const chunkTexts = new Map<string, string>();
beforeAll(async () => {
  const { loadDataset } = await import('../../src/load/dataset.js');
  const { chunkDocuments, defaultTokenizer } = await import('../../src/chunk/chunker.js');
  const ds = await loadDataset({ path: tiny });
  // Chunk ids repeat across chunkings (`<doc>#0`): key by chunking too.
  for (const [key, spec] of [['none', { size: null, overlap: 0 }], ['cs16-ov4', { size: 16, overlap: 4 }]] as const)
    for (const c of chunkDocuments(ds.docs, spec, defaultTokenizer())) chunkTexts.set(`${key}/${c.id}`, c.text);
});
