/**
 * Issue 24 §3: no exit code outside the README's table (0 ok, 1 the user's input or a refused resource, 2 usage,
 * 70 our bug, 130 Ctrl-C). Every failure mode of the list that is cheap to provoke runs through the CLI
 * (in-process, runCli) and must give its documented code, with a message naming the file, key or limit. Those not here
 * need a full disk, a slow server or a signal, and are covered by their own tests (test/store/resource-temp.test.ts,
 * test/net/http-bounds.test.ts, test/run/crash-*.test.ts).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT, runCli } from '../../src/cli/main.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

let work: string;
let results: string;

async function cli(...args: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: () => undefined, stderr: (s) => void (err += s) });
  process.exitCode = undefined;
  return { code, err };
}

/** A config file in the work folder: the tiny dataset, k = 1, keyword only unless `extra` sets modes, plus `extra`. */
function config(name: string, extra = '', dataset = tiny, cacheDir = path.join(work, 'cache')): string {
  const file = path.join(work, `${name}.yaml`);
  writeFileSync(file, `name: ${name}\ndataset: { path: ${dataset} }\ntopK: [1]\nprimaryMetric: ndcg@1\n${extra.includes('modes:') ? '' : 'modes: [keyword]\n'}cacheDir: ${cacheDir}\n${extra}`);
  return file;
}

/** A copy of the tiny dataset whose questions.jsonl is `questions`. */
function dataset(name: string, questions: string | Buffer): string {
  const dir = path.join(work, name);
  cpSync(tiny, dir, { recursive: true });
  writeFileSync(path.join(dir, 'questions.jsonl'), questions);
  return dir;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'rs-exit-'));
  results = path.join(work, 'results');
  const r = await cli('run', config('ok'), '--out', results);
  expect(r.code).toBe(EXIT.ok);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('exit codes of the issue 24 failure modes', () => {
  it('a grid over limits.maxConfigurations: validate and run exit 1 naming the key and the count', async () => {
    const cfg = config('grid', 'chunking: { sizes: [8, 16, 32] }\nlimits: { maxConfigurations: 2 }\n');
    for (const cmd of ['validate', 'run']) {
      const r = await cli(cmd, cfg, ...(cmd === 'run' ? ['--out', path.join(work, 'out-grid')] : []));
      expect(r.code).toBe(EXIT.input);
      expect(r.err).toContain('limits.maxConfigurations');
      expect(r.err).toContain('the grid has 3 configurations');
    }
  });

  it('statistics.resamples: 1e12 exits 1 at validate', async () => {
    const r = await cli('validate', config('resamples', 'statistics: { resamples: 1e12 }\n'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('statistics.resamples');
  });

  it('an unknown key inside a fusion entry or a rerank entry exits 1 naming it and the nearest key', async () => {
    const fusion = await cli('validate', config('fusion', 'hybrid: { fusion: [{ method: rrf, weigth: 0.5 }] }\n'));
    expect(fusion.code).toBe(EXIT.input);
    expect(fusion.err).toContain('hybrid.fusion.0.weigth: unknown key (got 0.5); did you mean hybrid.fusion.0.weights?');
    const rerank = await cli('validate', config('rerank', 'rerank: [{ model: "transformers:x", depth: 5, dept: 3 }]\n'));
    expect(rerank.code).toBe(EXIT.input);
    expect(rerank.err).toContain('rerank.0.dept: unknown key (got 3); did you mean rerank.0.depth?');
  });

  it('a config with 0 configurations exits 1', async () => {
    const r = await cli('validate', config('zero', 'modes: []\n'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('nothing to sweep');
  });

  it('a questions.jsonl line over 16 MiB exits 1 naming the file, the line and the limit', async () => {
    const ds = dataset('long-line', `{"id": "q1", "question": "refund", "relevant": ["billing/invoices.md"]}\n{"id": "q2", "question": "${'x'.repeat(16 << 20)}"}\n`);
    const r = await cli('validate', config('long', '', ds));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${path.join(ds, 'questions.jsonl')}:2: line 2 is longer than 16 MiB`);
  });

  it('a questions.jsonl line that is not JSON exits 1 naming the line', async () => {
    const ds = dataset('not-json', '{"id": "q1", "question": "refund", "relevant": ["billing/invoices.md"]}\n{"id": \n');
    const r = await cli('validate', config('notjson', '', ds));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${path.join(ds, 'questions.jsonl')}:2`);
  });

  it('a lock path that is a folder exits 1 naming it', async () => {
    const out = path.join(work, 'out-lock');
    mkdirSync(`${out}.lock`, { recursive: true });
    const r = await cli('run', config('lock'), '--out', out);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${out}.lock is a folder`);
  });

  it('--out under a file (ENOTDIR) exits 1 naming the path, not 70', async () => {
    writeFileSync(path.join(work, 'a-file'), 'x');
    const r = await cli('run', config('enotdir'), '--out', path.join(work, 'a-file', 'sub'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(path.join(work, 'a-file'));
    expect(r.err).not.toContain('internal error');
  });

  it('a cacheDir that is a file exits 1 naming it, not 70', async () => {
    const file = path.join(work, 'cache-file');
    writeFileSync(file, 'x');
    const r = await cli('run', config('cachefile', '', tiny, file), '--out', path.join(work, 'out-cachefile'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(file);
    expect(r.err).not.toContain('internal error');
  });

  it('a baseUrl on a port fetch refuses (1) exits 1 naming the port', async () => {
    const r = await cli(
      'run',
      config('port', 'modes: [semantic]\nembeddings: [{ model: "openai:x", baseUrl: "http://127.0.0.1:1/v1" }]\n'),
      '--out',
      path.join(work, 'out-port'),
    );
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toMatch(/port 1\b/);
  });

  it('validate refuses a baseUrl on a port fetch refuses, as run does, naming the key (embeddings and rerank)', async () => {
    const r = await cli('validate', config('port-validate', 'modes: [semantic]\nembeddings: [{ model: "openai:x", baseUrl: "http://127.0.0.1:1/v1" }]\n'));
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain('embeddings.0.baseUrl: uses port 1, which fetch refuses to connect to');
    const rr = await cli('validate', config('port-rerank', 'rerank: [{ model: "rerank:x", baseUrl: "http://127.0.0.1:6000", protocol: tei, depth: 5 }]\n'));
    expect(rr.code).toBe(EXIT.input);
    expect(rr.err).toContain('rerank.0.baseUrl: uses port 6000, which fetch refuses to connect to');
  });

  it('a retriever factory that never resolves: its rows fail (exit 0); with --fail-on failed-rows, exit 1', async () => {
    const mod = path.join(work, 'never.mjs');
    writeFileSync(mod, 'export default function never() { return new Promise(() => {}); }\n');
    const cfg = config('never', `retrievers: [{ name: never, module: ${mod}, timeoutMs: 100 }]\n`);
    expect((await cli('run', cfg, '--out', path.join(work, 'out-never'))).code).toBe(EXIT.ok);
    const r = await cli('run', cfg, '--out', path.join(work, 'out-never2'), '--fail-on', 'failed-rows');
    expect(r.code).toBe(EXIT.input);
  });

  it('evaluate with an empty qrels file exits 1 naming it', async () => {
    const qrels = path.join(work, 'empty.qrels');
    const run = path.join(work, 'one.run');
    writeFileSync(qrels, '');
    writeFileSync(run, 'q1 Q0 d1 1 1.0 x\n');
    const r = await cli('evaluate', qrels, run);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(qrels);
  });

  it('recheck of a results folder whose matrix.csv was edited exits 1', async () => {
    const copy = path.join(work, 'results-edited');
    cpSync(results, copy, { recursive: true });
    expect((await cli('recheck', copy)).code).toBe(EXIT.ok);
    const csv = path.join(copy, 'matrix.csv');
    const [header, ...rows] = readFileSync(csv, 'utf8').split('\n');
    const col = header.split(',').indexOf('ndcg');
    const cells = rows[0].split(',');
    cells[col] = String(Number(cells[col]) === 0.5 ? 0.25 : 0.5);
    writeFileSync(csv, [header, cells.join(','), ...rows.slice(1)].join('\n'));
    expect((await cli('recheck', copy)).code).toBe(EXIT.input);
  });

  it('doctor: a folder that does not exist and a damaged cache exit 1; a usage error exits 2', async () => {
    expect((await cli('doctor', path.join(work, 'no-such-cache'))).code).toBe(EXIT.input);
    expect((await cli('doctor', path.join(work, 'cache'))).code).toBe(EXIT.ok);
    const cp = path.join(work, 'cache', 'checkpoints');
    const damaged = path.join(cp, 'f'.repeat(64) + '.json');
    writeFileSync(damaged, '{"format":2,"key":"x","sha256":"y"}\n[]');
    expect((await cli('doctor', path.join(work, 'cache'))).code).toBe(EXIT.input);
    rmSync(damaged);
    expect((await cli('doctor', path.join(work, 'cache'), '--no-such-flag')).code).toBe(EXIT.usage);
    expect((await cli('run', config('usage'), '--fail-on', 'nonsense')).code).toBe(EXIT.usage);
  });
});
