import { describe, expect, it, beforeAll } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { requiredModelFiles } from '../../src/embed/transformers.js';
import { writeArtifacts, loadSweepResult, runRows, trecId, checkOutputDir } from '../../src/run/artifacts.js';
import { analyze, withStatistics } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';
import { readQrels, readRun } from '../../src/load/trec.js';
import { evaluate } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';
import type { SweepResult } from '../../src/types.js';
import { buildTinyModel } from '../../scripts/build-tiny-model.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

/** Runs a sweep on the tiny fixture and writes its artifacts into a fresh temp folder. */
async function sweepAndWrite(overrides: Record<string, unknown>, resume = true): Promise<{ dir: string; result: SweepResult }> {
  const config = parseConfig({
    name: 'tiny',
    dataset: { path: tiny },
    chunking: { sizes: ['none', 16], overlap: 4 },
    topK: [1, 3, 5],
    modes: ['keyword'],
    primaryMetric: 'ndcg@3',
    cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-cache-')), 'c'),
    statistics: { seed: 7, resamples: 1000, alpha: 0.05 },
    ...overrides,
  });
  const { result: raw } = await runSweep(config, { now: () => new Date('2026-01-01T00:00:00Z'), resume });
  const analysis = analyze(raw, { seed: 7, resamples: 1000 });
  const result = withStatistics(raw, analysis);
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-out-')), 'results');
  writeArtifacts(dir, result, renderReports(result, analysis) as unknown as Record<string, string>);
  return { dir, result };
}

describe('sweep end to end on a tiny folder (keyword mode)', () => {
  let dir: string;
  let result: SweepResult;
  beforeAll(async () => {
    ({ dir, result } = await sweepAndWrite({}));
  });

  it('expands 2 chunkings x 1 mode x 3 k = 6 rows, all ok, in grid order', () => {
    expect(result.configs.map((c) => c.config.id)).toEqual([
      'none.keyword.k1',
      'none.keyword.k3',
      'none.keyword.k5',
      'cs16-ov4.keyword.k1',
      'cs16-ov4.keyword.k3',
      'cs16-ov4.keyword.k5',
    ]);
    expect(result.configs.every((c) => c.status === 'ok')).toBe(true);
  });

  it('leaves out the question with no relevant label and lists it', () => {
    // q6 has only a grade-0 judgement: 5 of the 6 questions are scored.
    expect(result.excluded.map((e) => e.id)).toEqual(['q6']);
    expect(result.configs[0].questions).toBe(5);
  });

  it('ranks the LMP-204 manual first for "LMP-204 seal kit" and for a bare "204" (whole documents)', () => {
    const k1 = result.configs.find((c) => c.config.id === 'none.keyword.k1')!;
    const q2 = k1.perQuery.find((q) => q.qid === 'q2')!;
    const q3 = k1.perQuery.find((q) => q.qid === 'q3')!;
    expect(q2.retrieved[0].docId).toBe('products/lmp-204.md');
    expect(q3.retrieved[0].docId).toBe('products/lmp-204.md');
  });

  it('every k is a prefix of the same ranking', () => {
    const k3 = result.configs.find((c) => c.config.id === 'cs16-ov4.keyword.k3')!;
    const k5 = result.configs.find((c) => c.config.id === 'cs16-ov4.keyword.k5')!;
    for (const [j, q] of k3.perQuery.entries()) {
      expect(q.retrieved).toEqual(k5.perQuery[j].retrieved.slice(0, 3));
    }
  });

  it('means are the average of the per-question values', () => {
    const row = result.configs.find((c) => c.config.id === 'none.keyword.k3')!;
    const values = row.perQuery.map((q) => q.metrics['ndcg@3']);
    expect(row.means['ndcg@3']).toBeCloseTo(values.reduce((a, b) => a + b, 0) / 5, 10);
  });

  it('writes the artifacts, and trec_eval-style evaluation of every exported run reproduces the matrix', () => {
    for (const f of ['matrix.csv', 'matrix.json', 'per-query.jsonl', 'report.md', 'report.html', 'manifest.json', 'qrels.trec']) {
      expect(existsSync(path.join(dir, f))).toBe(true);
    }
    const runs = readdirSync(path.join(dir, 'runs'));
    expect(runs.length).toBe(6);
    const qrels = readQrels(path.join(dir, 'qrels.trec'));
    for (const row of result.configs) {
      const run = readRun(path.join(dir, 'runs', `${row.config.id}.trec`));
      const measures = Object.keys(row.means).map(parseMeasure);
      const ev = evaluate(qrels, run, measures);
      for (const [name, value] of Object.entries(row.means)) expect(ev.mean[name]).toBeCloseTo(value, 12);
    }
  });

  it('a later chunk of an already-listed document is exported under its chunk id (never a duplicate docno)', () => {
    for (const row of result.configs) {
      const rows = runRows(row);
      const keys = rows.map((r) => `${r.qid} ${r.docno}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
  });

  it('reads a finished results folder back', () => {
    const back = loadSweepResult(dir);
    expect(back.configs.map((c) => c.config.id)).toEqual(result.configs.map((c) => c.config.id));
    expect(back.configs[2].perQuery).toEqual(result.configs[2].perQuery);
    expect(back.questions.map((q) => q.id)).toEqual(result.questions.map((q) => q.id));
  });

  it('a damaged results folder is RESULTS_INVALID naming the file and line, not a crash', () => {
    const copy = path.join(mkdtempSync(path.join(tmpdir(), 'rs-damaged-')), 'r');
    cpSync(dir, copy, { recursive: true });
    const pq = path.join(copy, 'per-query.jsonl');
    const lines = readFileSync(pq, 'utf8').trimEnd().split('\n');
    lines[lines.length - 1] = lines[lines.length - 1].slice(0, 20); // a truncated last line
    writeFileSync(pq, lines.join('\n') + '\n');
    try {
      loadSweepResult(copy);
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({ code: 'RESULTS_INVALID', location: { file: pq, line: lines.length } });
    }
    writeFileSync(path.join(copy, 'configs.json'), '{}');
    expect(() => loadSweepResult(copy)).toThrowError(expect.objectContaining({ code: 'RESULTS_INVALID' }) as Error);
  });

  it('the manifest records the tie rule, BM25 parameters, fingerprint and package versions', () => {
    const m = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    expect(m.tieRule).toContain('score descending, then id descending');
    expect(m.bm25.k1).toBe(1.2);
    expect(m.bm25.b).toBe(0.75);
    expect(m.dataset.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(m.packages['wink-bm25-text-search']).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('TREC ids', () => {
  it('percent-encodes whitespace and % so ids stay one token', () => {
    expect(trecId('my notes.md')).toBe('my%20notes.md');
    expect(trecId('a%b\tc')).toBe('a%25b%09c');
    expect(trecId('faq/payments.md')).toBe('faq/payments.md');
  });
});

describe('evidence level on the tiny folder', () => {
  it('scores chunks against projected evidence and reports token-budget recall', async () => {
    const { result } = await sweepAndWrite({ level: 'evidence', evidenceBudgets: [64] });
    // q6 has no evidence span: excluded; the other five each carry one span.
    expect(result.excluded.map((e) => e.id)).toEqual(['q6']);
    const row = result.configs.find((c) => c.config.id === 'cs16-ov4.keyword.k5')!;
    expect(row.status).toBe('ok');
    for (const name of ['recall@5', 'ndcg@5', 'evidence_recall@5', 'evidence_precision@5', 'tokens@5', 'evidence_recall@64t'])
      expect(row.means[name]).toBeTypeOf('number');
    const stats = (result.manifest.evidence as { projection: Record<string, { spans: number }> }).projection;
    expect(stats['cs16-ov4'].spans).toBe(5);
  });

  it('exports chunk-level qrels per chunking and chunk-id runs that reproduce every trec_eval measure', async () => {
    const { result, dir } = await sweepAndWrite({ level: 'evidence' });
    expect(existsSync(path.join(dir, 'qrels.trec'))).toBe(false);
    for (const row of result.configs) {
      const qrels = readQrels(path.join(dir, 'qrels', `${row.config.chunkingKey}.trec`));
      const run = readRun(path.join(dir, 'runs', `${row.config.id}.trec`));
      // recall at this level counts evidence spans found, which is not a trec_eval measure; the rest must agree.
      const names = Object.keys(row.means).filter((n) => /^(hit_rate|precision|mrr|ndcg|ndcg_exp|map)@\d+$/.test(n));
      expect(names.length).toBe(6);
      const ev = evaluate(qrels, run, names.map(parseMeasure));
      for (const n of names) expect(ev.mean[n]).toBeCloseTo(row.means[n], 12);
    }
  });
});

describe('bad input writes nothing', () => {
  it('a label naming a missing document stops the run before any output', async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'rs-bad-')), 'results');
    await expect(
      (async () => {
        const config = parseConfig({
          dataset: { path: path.resolve(here, '../fixtures/sweep/dangling') },
          modes: ['keyword'],
          topK: [1],
          primaryMetric: 'ndcg@1',
        });
        await runSweep(config);
      })(),
    ).rejects.toMatchObject({ code: 'LABEL_INVALID' });
    expect(existsSync(out)).toBe(false);
  });
});

describe('a failing stage becomes failed rows, not a failed sweep', () => {
  /** A model folder with every required file, none of them loadable: the provider fails at load time. */
  function brokenModelDir(): string {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-badmodel-')), 'broken-model');
    mkdirSync(path.join(dir, 'onnx'), { recursive: true });
    for (const f of requiredModelFiles('fp32')) writeFileSync(path.join(dir, f), f.endsWith('.json') ? '{}' : 'not an onnx model');
    return dir;
  }

  it('a model that will not load fails its semantic rows; keyword rows still run', async () => {
    const broken = brokenModelDir();
    const { result, dir } = await sweepAndWrite({
      chunking: { sizes: ['none'], overlap: 0 },
      modes: ['keyword', 'semantic'],
      embeddings: [`transformers:${broken}`],
    });
    const failed = result.configs.filter((c) => c.status === 'failed');
    const ok = result.configs.filter((c) => c.status === 'ok');
    expect(ok.map((c) => c.config.mode)).toEqual(['keyword', 'keyword', 'keyword']);
    expect(failed.map((c) => c.config.mode)).toEqual(['semantic', 'semantic', 'semantic']);
    expect(failed[0].error).toContain('broken-model');
    // Failed rows are in the matrix with their error, and have no run file.
    const csv = readFileSync(path.join(dir, 'matrix.csv'), 'utf8');
    expect(csv).toContain('failed');
    expect(existsSync(path.join(dir, 'runs', `${failed[0].config.id}.trec`))).toBe(false);
  });

  it('when every configuration fails, the sweep is an error (RUN_FAILED) and nothing is returned to write', async () => {
    const broken = brokenModelDir();
    const config = parseConfig({
      dataset: { path: tiny },
      modes: ['semantic'],
      embeddings: [`transformers:${broken}`],
      topK: [1],
      primaryMetric: 'ndcg@1',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-cache-')), 'c'),
    });
    await expect(runSweep(config)).rejects.toMatchObject({ code: 'RUN_FAILED' });
  });

  it('a transformers folder that does not exist (remote loading off) is the user\'s mistake: MODEL_NOT_FOUND before any work', async () => {
    const missing = path.join(mkdtempSync(path.join(tmpdir(), 'rs-nomodel-')), 'no-such-model');
    const config = parseConfig({
      dataset: { path: tiny },
      modes: ['keyword', 'semantic'],
      embeddings: [`transformers:${missing}`],
      topK: [1],
      primaryMetric: 'ndcg@1',
    });
    await expect(runSweep(config)).rejects.toMatchObject({ code: 'MODEL_NOT_FOUND' });
  });
});

describe('no question to score is an error, not an empty report', () => {
  it('questions whose labels are all grade 0 give QUESTIONS_INVALID', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-noq-'));
    mkdirSync(path.join(root, 'docs'));
    writeFileSync(path.join(root, 'docs', 'a.md'), 'Alpha text.');
    writeFileSync(path.join(root, 'questions.jsonl'), '{"id": "q1", "question": "alpha", "relevant": {"a.md": 0}}\n');
    const config = parseConfig({ dataset: { path: root }, modes: ['keyword'], topK: [1], primaryMetric: 'ndcg@1' });
    await expect(runSweep(config)).rejects.toMatchObject({ code: 'QUESTIONS_INVALID' });
  });
});

describe('the results folder never replaces what is not ours', () => {
  it('refuses a file, a non-empty foreign folder and the working directory; accepts new, empty and earlier results folders', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-outchk-'));
    const file = path.join(root, 'precious.txt');
    writeFileSync(file, 'keep me');
    const foreign = path.join(root, 'thesis');
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'chapter1.txt'), 'keep me too');
    const empty = path.join(root, 'empty');
    mkdirSync(empty);
    const earlier = path.join(root, 'earlier');
    mkdirSync(earlier);
    writeFileSync(path.join(earlier, 'manifest.json'), JSON.stringify({ tool: 'retrieval-sweep' }));
    for (const bad of [file, foreign, process.cwd(), path.dirname(process.cwd())])
      expect(() => checkOutputDir(bad)).toThrowError(expect.objectContaining({ code: 'OUTPUT_INVALID' }) as Error);
    for (const good of [path.join(root, 'new'), empty, earlier]) expect(() => checkOutputDir(good)).not.toThrow();
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    expect(readFileSync(path.join(foreign, 'chapter1.txt'), 'utf8')).toBe('keep me too');
  });

  it('refuses a folder whose parent cannot take a new folder', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-outchk-'));
    const file = path.join(root, 'a-file');
    writeFileSync(file, '');
    expect(() => checkOutputDir(path.join(file, 'sub', 'out'))).toThrowError(expect.objectContaining({ code: 'OUTPUT_INVALID' }) as Error);
  });
});

describe('semantic and hybrid through the transformers.js provider (tiny offline model), embedding once', () => {
  let modelDir: string;
  let cacheDir: string;
  beforeAll(async () => {
    modelDir = (await buildTinyModel(path.join(mkdtempSync(path.join(tmpdir(), 'rs-tiny-')), 'tiny-bert'))).dir;
    cacheDir = path.join(mkdtempSync(path.join(tmpdir(), 'rs-cache-')), 'c');
  });

  type EmbInfo = { documents: { distinct: number; cacheMisses: number; cacheHits: number }; queries: { cacheMisses: number } };

  it('embeds each distinct chunk text once across chunkings, then nothing when a k is added', async () => {
    const grid = {
      // Every fixture document is under 64 tokens, so both chunkings cut each into one identical chunk.
      chunking: { sizes: [64], overlap: [0, 4] },
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: [{ model: `transformers:${modelDir}`, label: 'tiny' }],
      hybrid: { rrfK: 60, depth: 10 },
      cacheDir,
    };
    const first = await sweepAndWrite(grid);
    expect(first.result.configs.every((c) => c.status === 'ok')).toBe(true);
    const chunkings = (first.result.manifest.chunking as { chunkings: { chunks: number }[] }).chunkings;
    const totalChunks = chunkings.reduce((s, c) => s + c.chunks, 0);
    const e1 = (first.result.manifest.embeddings as EmbInfo[])[0];
    // 5 documents x 2 chunkings = 10 chunks, but only 5 distinct texts: each is embedded once.
    expect(totalChunks).toBe(10);
    expect(e1.documents.distinct).toBe(5);
    expect(e1.documents.cacheMisses).toBe(5);

    // Without checkpoints the rankings are recomputed from cached vectors: nothing is embedded again.
    const second = await sweepAndWrite({ ...grid, topK: [1, 3, 5, 10] }, false);
    const e2 = (second.result.manifest.embeddings as EmbInfo[])[0];
    expect(e2.documents.cacheMisses).toBe(0);
    expect(e2.queries.cacheMisses).toBe(0);
    expect(e2.documents.cacheHits).toBe(e1.documents.distinct);
    // Same rankings for the rows both sweeps share.
    const a = first.result.configs.find((c) => c.config.id === 'cs64-ov0.hybrid.tiny.k5')!;
    const b = second.result.configs.find((c) => c.config.id === 'cs64-ov0.hybrid.tiny.k5')!;
    expect(b.perQuery).toEqual(a.perQuery);

    // With checkpoints (the default) every ranking unit is reused: the model embeds nothing at all.
    const third = await sweepAndWrite({ ...grid, topK: [1, 3, 5, 10] });
    const e3 = (third.result.manifest.embeddings as (EmbInfo & { from_checkpoint?: boolean })[])[0];
    expect(e3.from_checkpoint).toBe(true);
    expect(e3.documents).toBeUndefined();
    const cp = third.result.manifest.checkpoints as { reused: number; written: number };
    // 2 chunkings (checkpointed too) + 2 chunkings x (keyword, semantic, hybrid) = 6 units: 8, all reused, none written.
    expect(cp).toMatchObject({ reused: 2 + 6, written: 0 });
    const c = third.result.configs.find((x) => x.config.id === 'cs64-ov0.hybrid.tiny.k5')!;
    expect(c.perQuery).toEqual(a.perQuery);
    for (const row of second.result.configs) expect(third.result.configs.find((x) => x.config.id === row.config.id)!.means).toEqual(row.means);
  });
});
