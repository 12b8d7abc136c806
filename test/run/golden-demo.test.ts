/**
 * Issue 23's byte-identity pin: the bundled helpdesk demo swept through every unit kind that runs offline (chunking,
 * BM25, a dense ranking and its fusion from a deterministic bag-of-words provider, an external retriever module, an
 * imported run, a rerank on the tiny cross-encoder, scoring) must give exactly the outputs the sweep gave BEFORE it
 * became a plan run by an executor. The golden files in test/fixtures/golden/demo/ were written by the old code
 * (commit 1ea5cec's src/run/sweep.ts) with `UPDATE_GOLDEN=1 npx vitest run test/run/golden-demo.test.ts`:
 * - `matrix.csv`: the matrix without its timing columns (build_seconds, mean_query_ms), compared cell by cell;
 * - `digests.json`: the SHA-256 of per-query.jsonl and of every runs/*.trec, compared byte for byte.
 * Do not regenerate them to make this test pass: a difference means a number changed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import type { EmbeddingProvider, EmbedRole } from '../../src/embed/provider.js';
import { buildTinyCrossEncoder } from '../../scripts/build-tiny-model.js';
import { isTimingKey } from '../../scripts/compare-results.js';
import { bagVector } from '../helpers/bag.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const goldenDir = path.join(repo, 'test/fixtures/golden/demo');
const D = 32;

/** A deterministic bag-of-words provider (word → bucket by a hash of its characters), L2-normalised. */
function bagProvider(): EmbeddingProvider {
  return {
    name: 'bag',
    label: 'bag',
    dimensions: D,
    cacheKey: (role: EmbedRole) => `bag-golden-v1:${role}`,
    async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
      return texts.map((t) => bagVector(t, D));
    },
    truncatedCount: () => 0,
    describe: () => ({ provider: 'bag' }),
    close: async () => {},
  };
}

/** matrix.csv without its timing columns. */
function metricColumns(csv: string): string {
  const lines = csv.split('\n').filter((l) => l.length > 0);
  // The demo's cells hold no quoted commas (errors are empty: every row is ok), so a plain split is exact here.
  const cols = lines[0].split(',');
  const keep = cols.map((c, i) => (isTimingKey(c) ? -1 : i)).filter((i) => i >= 0);
  return `${lines.map((l) => ((cells) => keep.map((i) => cells[i]).join(','))(l.split(','))).join('\n')}\n`;
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

describe('the demo through every offline unit kind gives the outputs of the code before the executor (golden files)', () => {
  let out: string;
  beforeAll(async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'rs-golden-'));
    const ce = (await buildTinyCrossEncoder(path.join(tmp, 'tiny-ce'))).dir;
    const config = parseConfig({
      name: 'helpdesk-golden',
      dataset: { path: path.join(repo, 'datasets/helpdesk') },
      chunking: { sizes: ['none', 128], overlap: 16 },
      topK: [1, 5, 10],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: [],
      hybrid: { rrfK: 60, depth: 20 },
      retrievers: [{ name: 'words', module: path.join(repo, 'examples/retrievers/words.mjs'), options: { minShared: 1 } }],
      runs: [{ name: 'minisearch', path: path.join(repo, 'examples/runs/helpdesk-minisearch.trec') }],
      rerank: ['none', { model: `transformers:${ce}`, label: 'ce', depth: 5 }],
      primaryMetric: 'ndcg@5',
      cacheDir: path.join(tmp, 'cache'),
      statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    });
    const { result: raw } = await runSweep(config, { providers: [bagProvider()], resume: false, now: () => new Date('2026-01-01T00:00:00Z') });
    const analysis = analyze(raw, { seed: 7, resamples: 1000 });
    const result = withStatistics(raw, analysis);
    out = path.join(tmp, 'results');
    writeArtifacts(out, result, renderReports(result, analysis) as unknown as Record<string, string>);
    if (process.env.UPDATE_GOLDEN === '1') {
      mkdirSync(goldenDir, { recursive: true });
      writeFileSync(path.join(goldenDir, 'matrix.csv'), metricColumns(readFileSync(path.join(out, 'matrix.csv'), 'utf8')));
      const digests: Record<string, string> = { 'per-query.jsonl': sha(readFileSync(path.join(out, 'per-query.jsonl'), 'utf8')) };
      for (const f of readdirSync(path.join(out, 'runs')).sort()) digests[`runs/${f}`] = sha(readFileSync(path.join(out, 'runs', f), 'utf8'));
      writeFileSync(path.join(goldenDir, 'digests.json'), `${JSON.stringify(digests, null, 1)}\n`);
    }
  }, 120_000);

  it('the golden files exist (made by the code before the executor)', () => {
    expect(existsSync(path.join(goldenDir, 'matrix.csv'))).toBe(true);
    expect(existsSync(path.join(goldenDir, 'digests.json'))).toBe(true);
  });

  it('matrix.csv: the same rows in the same order, every metric cell equal (timing columns aside)', () => {
    const got = metricColumns(readFileSync(path.join(out, 'matrix.csv'), 'utf8')).split('\n');
    const want = readFileSync(path.join(goldenDir, 'matrix.csv'), 'utf8').split('\n');
    // Every unit kind is represented: keyword, dense, fusion, external, run, rerank rows.
    for (const part of ['.keyword.', '.semantic.bag.', '.hybrid.bag.', 'none.words.', 'none.minisearch.', '.rr-ce-d5.'])
      expect(want.some((l) => l.includes(part))).toBe(true);
    expect(got.map((l) => l.split(',')[0])).toEqual(want.map((l) => l.split(',')[0]));
    expect(got).toEqual(want);
  });

  it('per-query.jsonl and every runs/*.trec are byte-identical to the golden digests', () => {
    const want = JSON.parse(readFileSync(path.join(goldenDir, 'digests.json'), 'utf8')) as Record<string, string>;
    const got: Record<string, string> = { 'per-query.jsonl': sha(readFileSync(path.join(out, 'per-query.jsonl'), 'utf8')) };
    for (const f of readdirSync(path.join(out, 'runs')).sort()) got[`runs/${f}`] = sha(readFileSync(path.join(out, 'runs', f), 'utf8'));
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(got).toEqual(want);
  });
});
