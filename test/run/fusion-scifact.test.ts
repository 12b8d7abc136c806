/**
 * Issue 14's invariants on real data: on SciFact (whole documents, glove-100d), convex fusion with alpha 1 gives the
 * semantic rows and alpha 0 the keyword rows value for value, weighted RRF at 0.5 gives plain RRF's rows, and the
 * added fusion rows embed nothing more than the plain hybrid run.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import type { SweepResult } from '../../src/types.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const scifact = path.resolve(repo, '../shared/datasets/scifact');

describe.skipIf(!existsSync(path.join(scifact, 'corpus.jsonl')))('fusion invariants on SciFact (../shared/datasets/scifact)', () => {
  let result: SweepResult;
  beforeAll(async () => {
    const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-fusion-')), 'c');
    const base = {
      dataset: { path: scifact, split: 'test' },
      topK: [1, 5, 10],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: ['glove-100d'],
      primaryMetric: 'ndcg@10',
      cacheDir,
    };
    ({ result } = await runSweep(
      parseConfig({
        ...base,
        hybrid: { depth: 50, fusion: ['rrf', { method: 'rrf', weights: [0.5] }, { method: 'convex', alpha: [0, 0.3, 1], normalize: ['minmax', 'zscore', 'dbsf'] }] },
      }),
      { resume: false },
    ));
  }, 600_000);

  const row = (r: SweepResult, id: string) => {
    const x = r.configs.find((c) => c.config.id === id);
    if (!x) throw new Error(`no row ${id}`);
    return x;
  };

  it('convex alpha 1 = semantic and alpha 0 = keyword, for every normalisation, value for value', () => {
    for (const n of ['mm', 'z', 'dbsf'])
      for (const k of [1, 5, 10]) {
        expect(row(result, `none.hybrid-cvx-${n}-a1.glove-100d.k${k}`).means).toEqual(row(result, `none.semantic.glove-100d.k${k}`).means);
        expect(row(result, `none.hybrid-cvx-${n}-a0.glove-100d.k${k}`).means).toEqual(row(result, `none.keyword.k${k}`).means);
      }
  });

  it('weighted RRF at 0.5 = plain RRF, value for value', () => {
    for (const k of [1, 5, 10]) expect(row(result, `none.hybrid-rrf-k60-w0.5.glove-100d.k${k}`).means).toEqual(row(result, `none.hybrid.glove-100d.k${k}`).means);
  });

  it('the fusion rows cost no embedding: each chunk and each question is sent to the model once for all 11 fusion settings', () => {
    type E = { documents: { requested: number }; queries: { requested: number } };
    const e = (result.manifest.embeddings as E[])[0];
    const chunks = (result.manifest.chunking as { chunkings: { chunks: number }[] }).chunkings[0].chunks;
    expect(e.documents.requested).toBe(chunks);
    expect(e.queries.requested).toBe(result.questions.length);
    // keyword + semantic + 11 fusion settings (rrf, rrf w0.5, 3 alphas x 3 normalisations), 3 k each.
    expect(result.configs.length).toBe((2 + 11) * 3);
  });
});
