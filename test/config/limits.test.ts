/**
 * Issue 24 §2 bounds in the config: the grid guard (`limits.maxConfigurations`, checked by validate and run before any
 * work, naming the count) and `statistics.resamples` bounded in the schema.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MAX_CONFIGURATIONS, MAX_RESAMPLES, parseConfig } from '../../src/config/schema.js';
import { checkGridSize, countConfigurations } from '../../src/config/limits.js';
import { expandGrid } from '../../src/config/expand.js';
import { EXIT, runCli } from '../../src/cli/main.js';
import { maxOf, minOf, appendAll } from '../../src/bounded.js';
import { thrown } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

const base = { name: 't', dataset: { path: tiny }, primaryMetric: 'ndcg@3' };

describe('countConfigurations equals expandGrid(config).length without expanding', () => {
  const cases: Record<string, unknown>[] = [
    { chunking: { sizes: ['none', 16], overlap: 4 }, topK: [1, 3, 5], modes: ['keyword'] },
    {
      chunking: { sizes: ['none', 16, 32], overlap: [0, 4] },
      topK: [1, 3, 5, 10],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: ['use-lite', 'glove-100d'],
      hybrid: { depth: 20, fusion: [{ method: 'rrf', k: [10, 60] }, { method: 'convex', alpha: [0.3, 0.7] }] },
    },
    {
      chunking: { sizes: [16], overlap: 4 },
      topK: [3],
      modes: ['semantic'],
      embeddings: ['use-lite'],
      rerank: ['none', { model: 'transformers:Xenova/ms-marco-MiniLM-L-6-v2', depth: [5, 10] }],
    },
  ];
  for (const [i, c] of cases.entries()) {
    it(`case ${i + 1}`, () => {
      const config = parseConfig({ ...base, ...c });
      expect(countConfigurations(config)).toBe(expandGrid(config).length);
    });
  }
  it('case 2 by hand: (3 sizes none+2x2 overlaps = 5 chunkings) x (1 + 2 models x 1 + 2 models x 4 fusions) x 4 k', () => {
    const config = parseConfig({ ...base, ...cases[1] });
    expect(countConfigurations(config)).toBe(5 * (1 + 2 * 1 + 2 * 4) * 4);
  });
});

describe('the grid guard (limits.maxConfigurations)', () => {
  const big = { chunking: { sizes: ['none', 16], overlap: 4 }, modes: ['keyword'], topK: Array.from({ length: 60 }, (_, i) => i + 1) };

  it('defaults to 10,000 and passes a grid at the limit', () => {
    expect(DEFAULT_MAX_CONFIGURATIONS).toBe(10_000);
    const config = parseConfig({ ...base, ...big, primaryMetric: 'ndcg@3', limits: { maxConfigurations: 120 } });
    expect(config.limits.maxConfigurations).toBe(120);
    expect(checkGridSize(config)).toBe(2 * 60);
  });

  it('refuses a grid past the limit with the count, the key and the remedy', () => {
    const config = parseConfig({ ...base, ...big, limits: { maxConfigurations: 119 } });
    const e = thrown(() => checkGridSize(config));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('the grid has 120 configurations, more than limits.maxConfigurations (119)');
    expect(e.remedy).toMatch(/shrink the grid.*raise limits.maxConfigurations/);
  });

  it('validate and run exit 1 before reading the dataset (the path does not even exist), printing the count', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-limits-'));
    const file = path.join(dir, 'big.yaml');
    // 3 chunkings x 1 mode x 5000 k values = 15,000 configurations > 10,000.
    const topK = Array.from({ length: 5000 }, (_, i) => i + 1);
    writeFileSync(file, `name: big\ndataset: { path: ${path.join(dir, 'no-such-dataset')} }\nchunking: { sizes: [none, 16, 32], overlap: 4 }\ntopK: [${topK.join(', ')}]\nmodes: [keyword]\nprimaryMetric: ndcg@3\n`);
    for (const cmd of ['validate', 'run']) {
      let err = '';
      const code = await runCli(['node', 'retrieval-sweep', cmd, file, ...(cmd === 'run' ? ['--out', path.join(dir, 'out'), '-q'] : [])], {
        stdout: () => {},
        stderr: (s) => void (err += s),
      });
      process.exitCode = undefined;
      expect(code).toBe(EXIT.input);
      expect(err).toContain(`the grid has ${3 * 5000} configurations, more than limits.maxConfigurations (10000)`);
    }
  });
});

describe('statistics.resamples is bounded', () => {
  it(`1e12 is refused by the schema (at most ${MAX_RESAMPLES}); ${MAX_RESAMPLES} passes`, () => {
    expect(thrown(() => parseConfig({ ...base, statistics: { resamples: 1e12 } })).message).toContain(`statistics.resamples`);
    expect(thrown(() => parseConfig({ ...base, statistics: { resamples: 1e12 } })).message).toContain(`must be at most ${MAX_RESAMPLES}`);
    expect(parseConfig({ ...base, statistics: { resamples: MAX_RESAMPLES } }).statistics.resamples).toBe(100_000);
  });
});

describe('no spread of an input-sized array into a call', () => {
  it('maxOf, minOf and appendAll take 500,000 elements (a spread throws RangeError there)', () => {
    const xs = Array.from({ length: 500_000 }, (_, i) => i % 1000);
    expect(() => Math.max(...xs)).toThrow(RangeError);
    expect(maxOf(xs)).toBe(999);
    expect(minOf(xs)).toBe(0);
    expect(maxOf([], 1)).toBe(1);
    expect(minOf([], 0)).toBe(0);
    expect(appendAll([-1], xs).length).toBe(500_001);
  });
});
