/**
 * The loop on the tiny fixture (keyword rows): sweep → pool → a label merged into questions.jsonl → sweep again. The
 * second sweep takes every ranking unit (and chunking) from its checkpoint and writes none (checkpoint keys do not
 * depend on grades), and the pool no longer holds the labelled pair. Also: a results folder from an older version.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import { poolFromResults } from '../../src/label/pool.js';
import { mergeLabelsFile } from '../../src/label/merge.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

describe('sweep → pool → label → sweep', () => {
  it('re-running after labelling repeats only scoring, and the pool shrinks by the labelled pair', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-loop-'));
    const ds = path.join(root, 'tiny');
    cpSync(tiny, ds, { recursive: true });
    const config = parseConfig({
      name: 'tiny',
      dataset: { path: ds },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3, 5],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(root, 'cache'),
      statistics: { seed: 7, resamples: 1000, alpha: 0.05, minQuestions: 1 },
    });
    const sweep = async (name: string) => {
      const { result: raw } = await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z') });
      const analysis = analyze(raw, { seed: 7, resamples: 1000, minQuestions: 1 });
      const result = withStatistics(raw, analysis);
      const dir = path.join(root, name);
      writeArtifacts(dir, result, renderReports(result, analysis) as unknown as Record<string, string>);
      return { dir, result };
    };
    const first = await sweep('r1');
    const pool = await poolFromResults(first.dir, { depth: 3, rows: 'all' });

    // Brute force over per-query.jsonl: the (question, document) pairs in the top 3 of the deepest row of each family
    // that questions.jsonl does not grade.
    const relevant = new Map<string, Record<string, number>>(
      readFileSync(path.join(ds, 'questions.jsonl'), 'utf8').trim().split('\n').map((l) => {
        const o = JSON.parse(l) as { id: string; relevant: Record<string, number> | string[] };
        return [o.id, Array.isArray(o.relevant) ? Object.fromEntries(o.relevant.map((d) => [d, 1])) : o.relevant];
      }),
    );
    const expected = new Set<string>();
    for (const line of readFileSync(path.join(first.dir, 'per-query.jsonl'), 'utf8').trim().split('\n')) {
      const o = JSON.parse(line) as { config_id: string; qid: string; ranked_docs: string[] };
      if (!o.config_id.endsWith('.k5')) continue;
      for (const d of o.ranked_docs.slice(0, 3)) if (!(d in relevant.get(o.qid)!)) expected.add(`${o.qid} ${d}`);
    }
    expect(new Set(pool.pairs.map((p) => `${p.qid} ${p.doc}`))).toEqual(expected);
    expect(pool.pairs.length).toBe(expected.size);
    expect(pool.header.rows).toEqual(['none.keyword.k5', 'cs16-ov4.keyword.k5']);

    const top = pool.pairs[0];
    const m = mergeLabelsFile(path.join(ds, 'questions.jsonl'), [{ qid: top.qid, doc: top.doc, start: top.start, end: top.end, grade: 0, source: 'human', assessor: 'alice', disagreements: [] }], 'evidence');
    expect(m.added).toBe(1);

    const second = await sweep('r2');
    const cp = second.result.manifest.checkpoints as { reused: number; written: number };
    // 2 chunkings + 2 keyword units, all from the first sweep's checkpoints.
    expect(cp).toMatchObject({ reused: 2 + 2, written: 0 });
    const again = await poolFromResults(second.dir, { depth: 3, rows: 'all' });
    expect(again.pairs.length).toBe(pool.pairs.length - 1);
    expect(again.pairs.some((p) => p.qid === top.qid && p.doc === top.doc)).toBe(false);

    // A results folder from an older version (no dataset.path in the manifest) is refused, naming what is missing.
    const manifestFile = path.join(second.dir, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { dataset: Record<string, unknown> };
    delete manifest.dataset.path;
    writeFileSync(manifestFile, JSON.stringify(manifest));
    const e = await rejection(poolFromResults(second.dir));
    expect(e.code).toBe('RESULTS_INVALID');
    expect(e.message).toContain('dataset.path');
  });

  it('at level evidence pairs are chunks with their ranges; a graded chunk lands as an evidence range and leaves the pool', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-loop-ev-'));
    const ds = path.join(root, 'tiny');
    cpSync(tiny, ds, { recursive: true });
    const config = parseConfig({
      name: 'tiny',
      dataset: { path: ds },
      level: 'evidence',
      chunking: { sizes: [16], overlap: 4 },
      topK: [1, 3, 5],
      modes: ['keyword'],
      primaryMetric: 'recall@3',
      cacheDir: path.join(root, 'cache'),
      statistics: { seed: 7, resamples: 1000, alpha: 0.05, minQuestions: 1 },
    });
    const sweep = async (name: string) => {
      const { result: raw } = await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z') });
      const analysis = analyze(raw, { seed: 7, resamples: 1000, minQuestions: 1 });
      const result = withStatistics(raw, analysis);
      const dir = path.join(root, name);
      writeArtifacts(dir, result, renderReports(result, analysis) as unknown as Record<string, string>);
      return dir;
    };
    const pool = await poolFromResults(await sweep('r1'), { depth: 5, rows: 'all' });
    expect(pool.header.level).toBe('chunk');
    expect(pool.header.sweepLevel).toBe('evidence');
    expect(pool.pairs.length).toBeGreaterThan(0);
    const texts = new Map<string, string>();
    for (const p of pool.pairs) {
      if (!texts.has(p.doc)) texts.set(p.doc, readFileSync(path.join(ds, 'docs', p.doc), 'utf8'));
      expect(p.chunk).toMatch(/#\d+$/);
      expect(p.passage).toBe(texts.get(p.doc)!.slice(p.start, p.end));
    }
    const top = pool.pairs[0];
    const file = path.join(ds, 'questions.jsonl');
    const m = mergeLabelsFile(file, [{ qid: top.qid, doc: top.doc, chunk: top.chunk, start: top.start, end: top.end, grade: 2, source: 'human', assessor: 'alice', disagreements: [] }], 'evidence');
    expect(m.added).toBe(1);
    const line = readFileSync(file, 'utf8').split('\n').map((l) => (l ? (JSON.parse(l) as { id: string; evidence?: unknown[] }) : null)).find((o) => o?.id === top.qid)!;
    expect(line.evidence!.at(-1)).toEqual({ doc: top.doc, start: top.start, end: top.end, grade: 2 });
    const again = await poolFromResults(await sweep('r2'), { depth: 5, rows: 'all' });
    expect(again.pairs.some((p) => p.qid === top.qid && p.start === top.start && p.doc === top.doc)).toBe(false);
  });
});
