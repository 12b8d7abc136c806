/**
 * The sweep's judged@k and condensed columns (issue 20 §1) on the tiny fixture: beside the usual columns, the usual
 * values unchanged, judged@k as the definition gives it from each question's ranking, and `recheck` agreeing with
 * every value (the new columns included) from the exported runs.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { isHarnessError } from '../../src/errors.js';
import { thrown } from '../helpers/errors.js';
import { ROW_FAMILIES } from '../../src/report/metrics.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { recheckResults } from '../../src/run/recheck.js';
import { runSweep } from '../../src/run/sweep.js';
import type { SweepResult } from '../../src/types.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-judged-cache-')), 'c');

async function sweep(unjudged: Record<string, unknown> | undefined): Promise<SweepResult> {
  const config = parseConfig({
    name: 'tiny',
    dataset: { path: tiny },
    chunking: { sizes: ['none', 16], overlap: 4 },
    topK: [1, 3, 5],
    modes: ['keyword'],
    primaryMetric: 'ndcg@3',
    cacheDir,
    statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    ...(unjudged ? { unjudged } : {}),
  });
  return (await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z') })).result;
}

describe('judged@k and condensed columns in the sweep', () => {
  let plain: SweepResult;
  let condensed: SweepResult;
  let dir: string;
  beforeAll(async () => {
    plain = await sweep(undefined);
    const raw = await sweep({ condensed: true });
    const analysis = analyze(raw, { seed: 7, resamples: 1000 });
    condensed = withStatistics(raw, analysis);
    dir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-judged-out-')), 'results');
    writeArtifacts(dir, condensed, renderReports(condensed, analysis) as unknown as Record<string, string>);
  });

  it('every row has judged@k; condensed columns only with unjudged.condensed; the usual values are unchanged', () => {
    for (const [i, row] of plain.configs.entries()) {
      const k = row.config.k;
      expect(row.means).toHaveProperty(`judged@${k}`);
      expect(Object.keys(row.means).some((n) => n.includes('_condensed'))).toBe(false);
      const other = condensed.configs[i];
      for (const f of ROW_FAMILIES) {
        expect(other.means[`${f}@${k}`]).toBe(row.means[`${f}@${k}`]);
        expect(other.means).toHaveProperty(`${f}_condensed@${k}`);
      }
      expect(other.means[`judged@${k}`]).toBe(row.means[`judged@${k}`]);
    }
  });

  it('judged@k per question is the share of the top k whose document has a label (any grade), each document once', () => {
    const relevant = new Map(condensed.questions.map((q) => [q.id, q.relevant]));
    for (const row of condensed.configs) {
      const k = row.config.k;
      for (const q of row.perQuery) {
        const labels = relevant.get(q.qid)!;
        const docs = q.retrieved.map((r) => r.docId);
        const judged = docs.filter((d, i) => Object.hasOwn(labels, d) && docs.indexOf(d) === i).length;
        expect(q.metrics[`judged@${k}`], `${row.config.id} ${q.qid}`).toBeCloseTo(judged / k, 12);
      }
    }
    // q2 "LMP-204 seal kit": the LMP-204 manual (grade 2) first, so judged@1 = 1/1
    const k1 = condensed.configs.find((c) => c.config.id === 'none.keyword.k1')!;
    expect(k1.perQuery.find((q) => q.qid === 'q2')!.metrics['judged@1']).toBe(1 / 1);
  });

  it('matrix.csv has judged and <family>_condensed after the usual columns, equal to the row means at its k', () => {
    const [header, ...lines] = readFileSync(path.join(dir, 'matrix.csv'), 'utf8').trimEnd().split('\n');
    const cols = header.split(',');
    expect(cols.slice(cols.indexOf('tier') + 1)).toEqual(['judged', ...ROW_FAMILIES.map((f) => `${f}_condensed`)]);
    for (const [i, line] of lines.entries()) {
      const cells = line.split(',');
      const row = condensed.configs[i];
      expect(Number(cells[cols.indexOf('judged')])).toBe(row.means[`judged@${row.config.k}`]);
      expect(Number(cells[cols.indexOf('ndcg_condensed')])).toBe(row.means[`ndcg_condensed@${row.config.k}`]);
    }
  });

  it('recheck re-scores every value, judged@k and the condensed ones included, from runs/*.trec with no disagreement', () => {
    const r = recheckResults(dir);
    expect(r.disagreements).toEqual([]);
    // 6 rows x (7 families + judged + 7 condensed), each compared in every copy recheck reads (issue 24): nested vs
    // the run, flat columns and matrix.csv vs nested, and every scored question's values in per-query.jsonl.
    const scored = condensed.configs[0].perQuery.length;
    expect(scored).toBe(5);
    expect(r.values).toBe(6 * (7 + 1 + 7) * (3 + scored));
    expect(r.maxDiff).toBeLessThanOrEqual(1e-12);
  });
});

describe('config: unjudged and the primary metric', () => {
  const base = { dataset: { path: tiny }, topK: [10], modes: ['keyword'] };
  it('unjudged defaults to {condensed: false, warnBelow: 0.5, maxSpread: 0.2}', () => {
    expect(parseConfig(base).unjudged).toEqual({ condensed: false, warnBelow: 0.5, maxSpread: 0.2 });
  });
  it('judged@10 cannot be the primary metric; ndcg_condensed@10 can only with unjudged.condensed', () => {
    const e = thrown(() => parseConfig({ ...base, primaryMetric: 'Judged@10' }));
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
    expect(e.message).toContain('primaryMetric (Judged@10) says how much is labelled');
    expect(thrown(() => parseConfig({ ...base, primaryMetric: 'ndcg_condensed@10' })).message).toContain('set unjudged: { condensed: true }');
    expect(parseConfig({ ...base, primaryMetric: 'ndcg_condensed@10', unjudged: { condensed: true } }).primaryMetric).toBe('ndcg_condensed@10');
  });
  it('warnBelow outside [0, 1] is refused naming the key', () => {
    expect(thrown(() => parseConfig({ ...base, unjudged: { warnBelow: 2 } })).message).toContain('unjudged.warnBelow');
  });
});
