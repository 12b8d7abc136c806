/**
 * The command line in-process (runCli with captured output): --version, exit codes, usage lines, validate's plan and
 * its errors (the same message the sweep gives for the same bad input), recheck as a subcommand.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT, runCli, interruptedMessage } from '../../src/cli/main.js';
import { loadConfigFile } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { EmbeddingCache, embeddingSpecKey } from '../../src/embed/cache.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';
import { isHarnessError } from '../../src/errors.js';
import { writeArtifacts } from '../../src/run/artifacts.js';
import * as fx from '../report/fixtures.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const dangling = path.resolve(here, '../fixtures/sweep/dangling');

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s) => void (out += s), stderr: (s) => void (err += s) });
  process.exitCode = undefined;
  return { code, out, err };
}

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'rs-cli-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Writes a YAML config into the temp folder and returns its path. */
function config(name: string, yaml: string): string {
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

describe('--version, --help and usage errors', () => {
  it('--version and -V print the version of package.json and exit 0 (it was an unknown option, exit 1)', async () => {
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await cli(flag);
      expect(r).toEqual({ code: EXIT.ok, out: `${version}\n`, err: '' });
    }
  });

  it('--help lists every command and exits 0', async () => {
    const r = await cli('--help');
    expect(r.code).toBe(0);
    for (const c of ['run', 'validate', 'evaluate', 'compare', 'recheck']) expect(r.out).toMatch(new RegExp(`^  ${c} `, 'm'));
  });

  it('an unknown option exits 2 with the usage line of the command that failed', async () => {
    const r = await cli('run', '--bogus');
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toContain("error: unknown option '--bogus'");
    expect(r.err).toContain('usage: retrieval-sweep run [options] [config]');
  });

  it('an unknown command, a missing argument and an extra argument exit 2', async () => {
    expect((await cli('frob')).code).toBe(2);
    const missing = await cli('recheck');
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('usage: retrieval-sweep recheck [options] <dir>');
    expect((await cli('validate', 'a.yaml', 'b.yaml')).code).toBe(2);
  });

  it('a bad option value (HarnessError USAGE inside a command) exits 2 with that command\'s usage line', async () => {
    const r = await cli('evaluate', 'q', 'r', '--threshold', '0');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--threshold must be a whole number ≥ 1 (got 0)');
    expect(r.err).toContain('usage: retrieval-sweep evaluate [options] <qrels> <run>');
  });

  it('a user-input error exits 1 with the message and remedy, no usage line', async () => {
    const r = await cli('validate', path.join(work, 'nope.yaml'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('config file not found');
    expect(r.err).toContain('remedy:');
    expect(r.err).not.toContain('usage:');
  });

  it('the interrupted message says nothing was written, where the embeddings are, and the command that resumes', () => {
    const m = interruptedMessage('configs/x.yaml', '/r/x', '/c');
    expect(m).toContain('/r/x was not touched');
    expect(m).toContain(path.join('/c', 'embeddings.sqlite'));
    expect(m).toContain('retrieval-sweep run configs/x.yaml --out /r/x');
  });
});

describe('validate', () => {
  it('a retriever module that does not exist and a run with an unknown qid: exit 1 with the sweep\'s message', async () => {
    const base = `dataset: { path: ${tiny} }\ntopK: [1]\nprimaryMetric: ndcg@1\nmodes: [keyword]\ncacheDir: ${path.join(work, 'cache-ext')}\n`;
    const mod = config('nomod', `name: nomod\n${base}retrievers: [{ name: x, module: ./no-such-module.mjs }]\n`);
    const a = await cli('validate', mod);
    expect(a.code).toBe(1);
    expect(a.err).toContain('retrievers[0].module: retriever x: no module file at');
    const runFile = path.join(work, 'bad-qid.trec');
    writeFileSync(runFile, 'q1 Q0 billing/refunds.md 1 2 t\nq999 Q0 billing/refunds.md 1 2 t\n');
    const run = config('badrun', `name: badrun\n${base}runs: [{ name: r, path: ${runFile} }]\n`);
    const b = await cli('validate', run);
    expect(b.code).toBe(1);
    expect(b.err).toContain(`${runFile}:2: run r: question id "q999" is not a scored question of the dataset`);
  });

  it('prints the plan of the tiny fixture: 3 chunkings × (2 keyword k + 2 semantic k) = 12 configurations', async () => {
    const file = config(
      'tiny',
      `name: tiny\ndataset: { path: ${tiny} }\nchunking: { sizes: [none, 16, 32], overlap: 4 }\ntopK: [1, 3]\nprimaryMetric: ndcg@3\n` +
        `modes: [keyword, semantic]\nembeddings: [glove-100d]\ncacheDir: ${path.join(work, 'cache-tiny')}\n`,
    );
    const r = await cli('validate', file);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`tiny: config ${file} is valid`);
    // none, cs16-ov4, cs32-ov4; keyword: 3 × 2 k = 6; semantic with one model: 3 × 2 = 6.
    expect(r.out).toContain('12 configurations (6 keyword, 6 semantic)');
    expect(r.out).toMatch(/^ {2}none {11}5 chunks/m);
    expect(r.out).toContain('no record of this model in the cache');
    const json = await cli('validate', file, '--json');
    const plan = JSON.parse(json.out) as { configurations: number; chunkings: { key: string }[]; models: { toEmbed: number; documentTexts: number; queryTexts: number }[] };
    expect(plan.configurations).toBe(12);
    expect(plan.chunkings.map((c) => c.key)).toEqual(['none', 'cs16-ov4', 'cs32-ov4']);
    expect(plan.models[0].toEmbed).toBe(plan.models[0].documentTexts + plan.models[0].queryTexts);
  });

  it('with a recorded throughput it counts the cache hits and estimates the time as to-embed ÷ texts/s', async () => {
    const cacheDir = path.join(work, 'cache-hits');
    const file = config(
      'hits',
      `name: hits\ndataset: { path: ${tiny} }\nchunking: { sizes: [none] }\ntopK: [1]\nprimaryMetric: ndcg@1\nmodes: [semantic]\n` +
        `embeddings: [glove-100d]\ncacheDir: ${cacheDir}\n`,
    );
    const before = JSON.parse((await cli('validate', file, '--json')).out) as { models: { documentTexts: number; queryTexts: number }[] };
    const { documentTexts, queryTexts } = before.models[0];
    // Store two of the document texts under a made-up provider key and record 10 texts in 4 s (2.5 texts/s).
    const docs = loadConfigFile(file);
    const { planSweep } = await import('../../src/run/plan.js');
    const cache = EmbeddingCache.open(path.join(cacheDir, 'embeddings.sqlite'));
    const texts = (await import('../../src/chunk/chunker.js')).chunkDocuments(
      (await (await import('../../src/run/plan.js')).loadConfigDataset(docs)).docs,
      { size: null, overlap: 0 },
    ).map((c) => c.text);
    const { embeddingCacheKey } = await import('../../src/embed/cache.js');
    cache.put(texts.slice(0, 2).map((t) => [embeddingCacheKey('docKey', t), new Float32Array(100)] as const));
    cache.recordThroughput({ specKey: embeddingSpecKey(resolveEmbeddingSpec('glove-100d')), documentKey: 'docKey', queryKey: 'qKey', texts: 10, seconds: 4 });
    cache.close();
    const plan = await planSweep(docs);
    const m = plan.models[0];
    expect(m.cacheHits).toBe(2);
    expect(m.toEmbed).toBe(documentTexts + queryTexts - 2);
    expect(m.textsPerSecond).toBeCloseTo(10 / 4, 10);
    expect(m.estimatedSeconds).toBeCloseTo((documentTexts + queryTexts - 2) / 2.5, 10);
  });

  /** The message the sweep gives for the same config (it stops in loading, before any model). */
  async function sweepError(file: string, code: string): Promise<string> {
    try {
      await runSweep(loadConfigFile(file));
    } catch (e) {
      if (isHarnessError(e)) {
        expect(e.code).toBe(code);
        return `error: ${e.format()}\n`;
      }
      throw e;
    }
    throw new Error('the sweep did not fail');
  }

  function dataset(name: string, edit: (dir: string) => void): string {
    const dir = path.join(work, name);
    cpSync(tiny, dir, { recursive: true });
    edit(dir);
    return dir;
  }

  const base = (ds: string, extra = '') =>
    `name: bad\ndataset: { path: ${ds} }\nchunking: { sizes: [none] }\ntopK: [1]\nprimaryMetric: ndcg@1\nmodes: [keyword]\n${extra}`;

  const dataCases: [string, () => string, string][] = [
    ['a missing dataset folder', () => path.join(work, 'no-such-folder'), 'DATASET_NOT_FOUND'],
    ['an empty folder', () => {
      const d = path.join(work, 'empty-ds');
      mkdirSync(path.join(d, 'docs'), { recursive: true });
      writeFileSync(path.join(d, 'questions.jsonl'), '');
      return d;
    }, 'DATASET_EMPTY'],
    ['a malformed questions line', () => dataset('malformed', (d) => appendFileSync(path.join(d, 'questions.jsonl'), '{"id": "q99", "question": \n')), 'QUESTIONS_INVALID'],
    ['a duplicate question id', () =>
      dataset('duplicate', (d) => appendFileSync(path.join(d, 'questions.jsonl'), '{"id": "q1", "question": "again", "relevant": ["billing/refunds.md"]}\n')), 'QUESTIONS_INVALID'],
    ['a label naming a document that is not in the folder', () => dangling, 'LABEL_INVALID'],
  ];
  for (const [name, make, code] of dataCases) {
    it(`${name}: exit 1 with the sweep's message (${code})`, async () => {
      const file = config(name.replace(/\W+/g, '-'), base(make()));
      const expected = await sweepError(file, code);
      const r = await cli('validate', file);
      expect(r.code).toBe(1);
      expect(r.err).toBe(expected);
    });
  }

  const configCases: [string, string, string][] = [
    ['an unknown embedding model', 'name: bad\nmodes: [semantic]\nembeddings: [no-such-model]\n', 'no-such-model'],
    ['overlap ≥ chunk size', 'name: bad\nchunking: { sizes: [32], overlap: 32 }\n', 'overlap'],
    ['k ≤ 0', 'name: bad\ntopK: [0]\n', 'topK'],
  ];
  for (const [name, yaml, names] of configCases) {
    it(`${name}: exit 1 with the config loader's message (the sweep's first step)`, async () => {
      const file = config(name.replace(/\W+/g, '-'), `${yaml}dataset: { path: ${tiny} }\n`);
      let expected = '';
      try {
        loadConfigFile(file);
      } catch (e) {
        if (isHarnessError(e)) expected = `error: ${e.format()}\n`;
      }
      expect(expected).toContain(names);
      const r = await cli('validate', file);
      expect(r.code).toBe(1);
      expect(r.err).toBe(expected);
    });
  }
});

describe('recheck', () => {
  it('re-scores a finished keyword sweep: every value agrees (exit 0); a changed value in matrix.json is exit 1', async () => {
    const file = config(
      'recheck',
      `name: recheck\ndataset: { path: ${tiny} }\nchunking: { sizes: [none, 16], overlap: 4 }\ntopK: [1, 3]\nprimaryMetric: ndcg@3\nmodes: [keyword]\n`,
    );
    const out = path.join(work, 'recheck-out');
    const run = await cli('run', file, '--out', out, '--quiet', '--json');
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.out) as {
      recommendation: { id: string } | null;
      highest: { id: string };
      enoughEvidence: boolean;
      enoughEvidenceReason: string | null;
      tier1: string[];
      outDir: string;
      files: string[];
      timings: Record<string, number>;
    };
    expect(summary.outDir).toBe(out);
    // 5 judged questions, fewer than statistics.minQuestions (30): the report says "Not enough evidence to choose", so the
    // JSON has no recommendation either; `highest` still names the top row.
    expect(summary.enoughEvidence).toBe(false);
    expect(summary.enoughEvidenceReason).toContain('fewer than the 30 a recommendation needs');
    expect(summary.recommendation).toBeNull();
    expect(summary.tier1[0]).toBe(summary.highest.id);
    expect(summary.files).toContain(path.join(out, 'matrix.json'));
    expect(summary.timings.total_seconds).toBeGreaterThanOrEqual(summary.timings.sweep_seconds + summary.timings.report_seconds);
    const ok = await cli('recheck', out);
    // 2 chunkings × 2 k = 4 rows, each with 7 families and judged@k (issue 20) at its k, compared in every copy (issue 24):
    // nested vs the run, flat columns and matrix.csv vs nested (8 each), and 5 scored questions × 8 in per-query.jsonl vs the run.
    expect(ok.out).toMatch(new RegExp(`^4 configurations, ${4 * (8 + 8 + 8 + 5 * 8)} values re-scored from runs/\\*\\.trec at relevance threshold 1; max \\|diff\\| 0\\.00e\\+0; 0 disagree\n$`));
    expect(ok.code).toBe(0);
    const mfile = path.join(out, 'matrix.json');
    const matrix = JSON.parse(readFileSync(mfile, 'utf8')) as { rows: { metrics: Record<string, number> }[] };
    matrix.rows[0].metrics['ndcg@1'] += 0.5;
    writeFileSync(mfile, JSON.stringify(matrix));
    const bad = await cli('recheck', out);
    expect(bad.code).toBe(1);
    // The edited nested value now disagrees with the run, and the flat column and matrix.csv disagree with it.
    expect(bad.out).toContain('3 disagree');
  });

  it('a folder without matrix.json is exit 1 (user input), naming the folder', async () => {
    const r = await cli('recheck', work);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`no matrix.json in ${work}`);
  });
});

describe('run --fail-on (issue 22)', () => {
  it('no-evidence: exit 1 after the results are written; without --fail-on the same run exits 0', async () => {
    const file = config('failon', `name: failon\ndataset: { path: ${tiny} }\ntopK: [1, 3]\nprimaryMetric: ndcg@3\nmodes: [keyword]\n`);
    const out = path.join(work, 'failon-out');
    const plain = await cli('run', file, '--out', out, '--quiet');
    expect(plain.code).toBe(0);
    rmSync(out, { recursive: true, force: true });
    const r = await cli('run', file, '--out', out, '--quiet', '--fail-on', 'failed-rows,no-evidence');
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('--fail-on: not enough evidence to choose: only 5 judged question(s), fewer than the 30');
    expect(r.err).not.toContain('failed:');
    expect(readFileSync(path.join(out, 'matrix.json'), 'utf8').length).toBeGreaterThan(0);
  });

  it('failed-rows: a retriever that throws fails its rows, and the run exits 1 naming them', async () => {
    const bad = path.resolve(here, '../fixtures/retrievers/bad.mjs');
    const file = config(
      'failrows',
      `name: failrows\ndataset: { path: ${tiny} }\ntopK: [1]\nprimaryMetric: ndcg@1\nmodes: [keyword]\n` +
        `retrievers: [{ name: broken, module: ${bad}, chunking: none, options: { mode: throw, at: q1 } }]\n`,
    );
    const out = path.join(work, 'failrows-out');
    const r = await cli('run', file, '--out', out, '--quiet', '--fail-on', 'failed-rows');
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('--fail-on: 1 configuration(s) failed: none.broken.k1');
    expect(r.err).not.toContain('not enough evidence');
  });

  it('an unknown condition is a usage error (exit 2) before anything runs', async () => {
    const r = await cli('run', path.join(work, 'nope.yaml'), '--fail-on', 'regression');
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toContain('--fail-on regression: run knows failed-rows, no-evidence');
  });
});

describe('compare (issue 22)', () => {
  const qs = Array.from({ length: 10 }, (_, j) => fx.question(`q${j}`, { [`d${j}`]: 1 }));
  const X = fx.spec({ mode: 'keyword', k: 5 });
  const Y = fx.spec({ mode: 'semantic', embedding: 'm', k: 5 });
  const base = [0.2, 0.4, 0.1, 0.3, 0.5, 0.2, 0.4, 0.1, 0.3, 0.5];
  let A: string;
  let B: string;
  beforeAll(() => {
    A = path.join(work, 'cmp-a');
    B = path.join(work, 'cmp-b');
    writeArtifacts(A, fx.sweep(qs, [fx.row(X, qs, { ndcg: base }), fx.row(Y, qs, { ndcg: base })], { name: 'base' }), {});
    // B: X 0.02 worse on every question (exact p = 2/1024), Y unchanged.
    writeArtifacts(B, fx.sweep(qs, [fx.row(X, qs, { ndcg: base.map((v) => v - 0.02) }), fx.row(Y, qs, { ndcg: base })], { name: 'pr' }), {});
  });

  it('--fail-on regression --margin 0.01: exit 1 naming the row; against itself: exit 0, no differences listed', async () => {
    const r = await cli('compare', A, B, '--fail-on', 'regression', '--margin', '0.01');
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`regression: 1 row(s) significantly worse than the baseline by more than 0.01: none.keyword.k5 ndcg@5 -0.0200`);
    expect(r.err).toContain(`in ${B}`);
    expect(r.out).toContain('1 identical');
    const same = await cli('compare', A, A, '--fail-on', 'regression', '--margin', '0.01');
    expect(same.code).toBe(0);
    expect(same.out).toContain('No differences: all 2 compared configurations give identical ndcg@5 on every question.');
    expect(same.out).not.toContain('none.keyword.k5 ');
    // A margin above the loss: significant, but no regression.
    expect((await cli('compare', A, B, '--fail-on', 'regression', '--margin', '0.05')).code).toBe(0);
  });

  it('--json keeps the keys of compare A B --json; several runs give {baseline, comparisons, tests, regressions}', async () => {
    const one = JSON.parse((await cli('compare', A, B, '--json')).out) as Record<string, unknown>;
    for (const key of ['a', 'b', 'family', 'seed', 'resamples', 'permutationResamples', 'alpha', 'questions', 'onlyInA', 'onlyInB', 'configsOnlyInA', 'configsOnlyInB', 'overall', 'settings', 'rows', 'notCompared', 'notes'])
      expect(one).toHaveProperty(key);
    expect(one.tests).toBe(1);
    const many = JSON.parse((await cli('compare', A, B, A, '--format', 'json')).out) as { baseline: string; comparisons: unknown[]; tests: number };
    expect(many.baseline).toBe('base');
    expect(many.comparisons).toHaveLength(2);
    expect(many.tests).toBe(1);
  });

  it('--format markdown is a pull-request comment; bad --format, --fail-on and --margin values are usage errors', async () => {
    const md = await cli('compare', A, B, '--format', 'markdown', '--margin', '0.01');
    expect(md.out.startsWith('### retrieval-sweep compare: ❌ 1 regression(s)\n')).toBe(true);
    expect((await cli('compare', A, B, '--format', 'html')).code).toBe(EXIT.usage);
    expect((await cli('compare', A, B, '--fail-on', 'failed-rows')).code).toBe(EXIT.usage);
    expect((await cli('compare', A, B, '--margin', '-1')).code).toBe(EXIT.usage);
    expect((await cli('compare', A, B, '--rows', 'nope.k5')).code).toBe(EXIT.usage);
  });
});
