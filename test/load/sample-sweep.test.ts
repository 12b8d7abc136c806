/**
 * `dataset.sample` reaches the sweep: the fingerprint and the manifest's dataset entry are the sample's, and the
 * optimism warning reaches the manifest's warnings (which the report shows).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'rs-sample-sweep-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('dataset.sample in a sweep', () => {
  it('the manifest records { documents, seed, judged, kept, total } and the warning says the metrics are optimistic', async () => {
    const root = path.join(tmp, 'beir');
    mkdirSync(path.join(root, 'qrels'), { recursive: true });
    const words = ['pump', 'fuse', 'router', 'reset', 'warranty', 'filter', 'seal', 'invoice', 'refund', 'card'];
    writeFileSync(
      path.join(root, 'corpus.jsonl'),
      Array.from({ length: 30 }, (_, i) => JSON.stringify({ _id: `c${i}`, text: `${words[i % 10]} note ${i}` })).join('\n'),
    );
    writeFileSync(path.join(root, 'queries.jsonl'), '{"_id": "a", "text": "pump"}\n{"_id": "b", "text": "router reset"}\n');
    writeFileSync(path.join(root, 'qrels', 'test.tsv'), 'a\tc0\t1\nb\tc2\t1\nb\tc3\t0\n');
    const config = parseConfig({
      name: 'sample',
      dataset: { path: root, sample: { documents: 10, seed: 3 } },
      chunking: { sizes: ['none'] },
      topK: [1],
      modes: ['keyword'],
      primaryMetric: 'ndcg@1',
      cacheDir: path.join(tmp, 'cache'),
    });
    const { result } = await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z'), resume: false });
    const ds = result.manifest.dataset as { sample: unknown; docs: number };
    // judged: c0, c2 and c3 (grade 0 included); 10 - 3 = 7 others drawn from the 27 unjudged
    expect(ds.sample).toEqual({ documents: 10, seed: 3, judged: 3, kept: 10, total: 30 });
    expect(ds.docs).toBe(10);
    // 100 * (1 - 7/27) = 74.07...%
    expect(result.manifest.warnings).toContain(
      'metrics are on a sample of 10 of 30 documents (every judged document, 3, plus 7 random others, seed 3): with 74.1% fewer distractors than the full corpus, they are optimistic',
    );
  });
});
