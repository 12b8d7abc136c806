/**
 * The open pipeline (issue 11): a user's retriever modules, a LlamaIndex.TS retriever, a TREC run made elsewhere, and
 * objects passed to runSweep are rows of the same matrix; each row equals trec_eval-style evaluation of its ranking.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfig } from '../../src/config/schema.js';
import { readRun } from '../../src/load/trec.js';
import { runSweep } from '../../src/run/sweep.js';
import { evaluate, type Qrels, type Run } from '../../src/score/evaluate.js';
import { parseMeasure } from '../../src/score/measures.js';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import type { ConfigResult, SweepResult } from '../../src/types.js';
import { rejection } from '../helpers/errors.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tiny = path.join(repo, 'test/fixtures/sweep/tiny');
const tmp = (p: string) => mkdtempSync(path.join(tmpdir(), p));

function qrelsOf(result: SweepResult): Qrels {
  return new Map(result.questions.map((q) => [q.id, new Map(Object.entries(q.relevant))]));
}

/** The row's ranking as a run of document ids, first occurrence of each document (the exported run's rule). */
function runOf(row: ConfigResult): Run {
  const run: Run = new Map();
  for (const q of row.perQuery) {
    const seen = new Set<string>();
    run.set(
      q.qid,
      q.retrieved.map((r, i) => {
        const docno = seen.has(r.docId) ? r.chunkId : r.docId;
        seen.add(r.docId);
        return { docno, score: q.retrieved.length - i };
      }),
    );
  }
  return run;
}

function expectRowEqualsEvaluate(row: ConfigResult, qrels: Qrels, run: Run = runOf(row)): void {
  expect(row.status).toBe('ok');
  const ev = evaluate(qrels, run, Object.keys(row.means).map(parseMeasure));
  for (const [name, value] of Object.entries(row.means)) expect(Math.abs(ev.mean[name] - value)).toBeLessThanOrEqual(1e-12);
}

describe('examples/helpdesk-open.yaml: a module, a LlamaIndex.TS retriever and an outside TREC run as rows', () => {
  let result: SweepResult;
  beforeAll(async () => {
    const config = loadConfigFile(path.join(repo, 'examples/helpdesk-open.yaml'));
    ({ result } = await runSweep({ ...config, cacheDir: path.join(tmp('rs-open-'), 'c') }));
  }, 300_000);

  it('has rows for every family: keyword on two chunkings, words on none, li-glove on cs128-ov16, the run on none', () => {
    const ids = result.configs.map((c) => c.config.id);
    for (const k of [1, 3, 5, 10]) {
      expect(ids).toContain(`none.keyword.k${k}`);
      expect(ids).toContain(`cs128-ov16.keyword.k${k}`);
      expect(ids).toContain(`none.words.k${k}`);
      expect(ids).toContain(`cs128-ov16.li-glove.k${k}`);
      expect(ids).toContain(`none.minisearch.k${k}`);
    }
    expect(result.configs.every((c) => c.status === 'ok')).toBe(true);
    expect(result.configs.find((c) => c.config.id === 'none.words.k5')!.config.mode).toBe('external');
    expect(result.configs.find((c) => c.config.id === 'none.minisearch.k5')!.config.mode).toBe('run');
  });

  it('(a) the words module: every row equals evaluate on its ranking to 1e-12', () => {
    for (const row of result.configs.filter((c) => c.config.retriever === 'words')) expectRowEqualsEvaluate(row, qrelsOf(result));
  });

  it('(b) the LlamaIndex.TS VectorStoreIndex retriever: every row equals evaluate on its ranking to 1e-12', () => {
    for (const row of result.configs.filter((c) => c.config.retriever === 'li-glove')) expectRowEqualsEvaluate(row, qrelsOf(result));
  });

  it('(c) the outside run: every row equals evaluate on the run file itself to 1e-12', () => {
    const file = readRun(path.join(repo, 'examples/runs/helpdesk-minisearch.trec'));
    for (const row of result.configs.filter((c) => c.config.retriever === 'minisearch')) expectRowEqualsEvaluate(row, qrelsOf(result), file);
  });
});

describe('library use: a retriever and a provider passed to runSweep as objects', () => {
  it('both become rows; the semantic row of the object provider equals evaluate on its ranking', async () => {
    // The README's example, nearly verbatim: a toy provider (letter counts) and a retriever that ranks by length.
    const letters: EmbeddingProvider = {
      name: 'letters',
      label: 'letters',
      dimensions: 26,
      cacheKey: (role) => `letters-v1/${role}`,
      async embedBatch(texts) {
        return texts.map((t) => {
          const v = new Float32Array(26);
          for (const ch of t.toLowerCase()) if (ch >= 'a' && ch <= 'z') v[ch.charCodeAt(0) - 97] += 1;
          return v;
        });
      },
      truncatedCount: () => 0,
      describe: () => ({ model: 'letters' }),
      close: async () => {},
    };
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1, 3],
      modes: ['semantic'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(tmp('rs-lib-'), 'c'),
    });
    const { result } = await runSweep(config, {
      providers: [letters],
      retrievers: [{ name: 'longest', factory: ({ chunks }) => ({ search: () => chunks.map((c) => ({ id: c.id, score: c.text.length })) }) }],
    });
    const ids = result.configs.map((c) => c.config.id);
    expect(ids).toEqual(['none.semantic.letters.k1', 'none.semantic.letters.k3', 'none.longest.k1', 'none.longest.k3']);
    for (const row of result.configs) expectRowEqualsEvaluate(row, qrelsOf(result));
    // "longest" ranks by text length: its first hit is the longest document for every question.
    const longest = result.configs.find((c) => c.config.id === 'none.longest.k1')!;
    expect(new Set(longest.perQuery.map((q) => q.retrieved[0].chunkId)).size).toBe(1);
  });
});

describe('bad retrievers: a clear error naming the retriever, the question and the value; the rest of the grid runs', () => {
  const module = path.join(repo, 'test/fixtures/retrievers/bad.mjs');
  async function sweepWith(mode: string, extra: Record<string, unknown> = {}) {
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1, 3],
      modes: ['keyword'],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(tmp('rs-bad-'), 'c'),
      retrievers: [{ name: 'bad', module, options: { mode, at: 'q2' }, ...extra }],
    });
    const { result } = await runSweep(config);
    const bad = result.configs.filter((c) => c.config.retriever === 'bad');
    const keyword = result.configs.filter((c) => c.config.retriever === 'keyword');
    expect(keyword.every((c) => c.status === 'ok')).toBe(true);
    expect(bad.every((c) => c.status === 'failed')).toBe(true);
    return bad[0].error ?? '';
  }

  it('an id the dataset does not know', async () => {
    expect(await sweepWith('unknown-id')).toMatch(/retriever bad, question q2: returned id "no-such-doc.md", which is neither a chunk id/);
  });
  it('a non-finite score', async () => {
    expect(await sweepWith('nan')).toMatch(/retriever bad, question q2: hit ".*" has score NaN/);
  });
  it('a thrown error', async () => {
    expect(await sweepWith('throw')).toMatch(/retriever bad, question q2: search threw: index is offline/);
  });
  it('a search that never resolves (timeoutMs)', async () => {
    expect(await sweepWith('hang', { timeoutMs: 200 })).toMatch(/retriever bad, question q2: search did not settle within 200 ms/);
  });

  it('a module that does not exist is CONFIG_INVALID before any work', async () => {
    const config = parseConfig({ dataset: { path: tiny }, topK: [1], modes: ['keyword'], primaryMetric: 'ndcg@1', retrievers: [{ name: 'x', module: './nope.mjs' }] });
    const e = await rejection(runSweep(config));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toMatch(/retriever x: no module file at .*nope\.mjs/);
  });

  it('a module whose default export is not a factory is CONFIG_INVALID naming what it exports', async () => {
    const config = parseConfig({
      dataset: { path: tiny },
      topK: [1],
      modes: ['keyword'],
      primaryMetric: 'ndcg@1',
      retrievers: [{ name: 'x', module: path.join(repo, 'test/fixtures/retrievers/not-a-factory.mjs') }],
    });
    const e = await rejection(runSweep(config));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toMatch(/default export .* is an object with keys search, not a factory function/);
  });
});

describe('runs made outside the tool are checked against the dataset', () => {
  const write = (text: string) => {
    const f = path.join(tmp('rs-run-'), 'r.trec');
    writeFileSync(f, text);
    return f;
  };
  const cfg = (file: string, labels = 'strict') =>
    parseConfig({ dataset: { path: tiny, labels }, topK: [1], modes: ['keyword'], primaryMetric: 'ndcg@1', runs: [{ name: 'r', path: file }] });

  it('an unknown qid is RUN_INVALID with the file and line', async () => {
    const f = write('q1 Q0 billing/refunds.md 1 2 t\nzz Q0 billing/refunds.md 1 2 t\n');
    const e = await rejection(runSweep(cfg(f)));
    expect(e.code).toBe('RUN_INVALID');
    expect(e.location).toMatchObject({ file: f, line: 2 });
  });

  it('an unknown docno is RUN_INVALID with its line; labels: keep scores it as unjudged instead', async () => {
    const f = write('q1 Q0 billing/refunds.md 1 2 t\nq1 Q0 ghost.md 2 1 t\n');
    const e = await rejection(runSweep(cfg(f)));
    expect(e.code).toBe('RUN_INVALID');
    expect(e.location.line).toBe(2);
    const { result } = await runSweep(cfg(f, 'keep'));
    const row = result.configs.find((c) => c.config.id === 'none.r.k1')!;
    expect(row.status).toBe('ok');
    expect(row.perQuery.find((q) => q.qid === 'q1')!.retrieved[0].docId).toBe('billing/refunds.md');
  });
});
