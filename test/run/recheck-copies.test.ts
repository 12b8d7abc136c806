/**
 * Issue 24 §1: `recheck` checks every copy of every number it wrote: matrix.json nested and flat, matrix.csv, and
 * per-query.jsonl against the runs. Each test alters one copy by one value and asserts exit 1 naming that copy.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXIT, runCli } from '../../src/cli/main.js';
import { parseCsv } from '../../src/run/recheck.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const tiny = path.resolve(here, '../fixtures/sweep/tiny');

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(['node', 'retrieval-sweep', ...args], { stdout: (s) => void (out += s), stderr: () => {} });
  process.exitCode = undefined;
  return { code, out };
}

let results: string;
beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-recheck-'));
  const config = path.join(dir, 'c.yaml');
  writeFileSync(config, `name: t\ndataset: { path: ${tiny} }\nchunking: { sizes: [none], overlap: 0 }\ntopK: [1, 3]\nmodes: [keyword]\nprimaryMetric: ndcg@3\ncacheDir: ${path.join(dir, 'cache')}\n`);
  results = path.join(dir, 'out');
  expect((await cli('run', config, '--out', results, '-q')).code).toBe(EXIT.ok);
});

function copy(): string {
  const d = path.join(mkdtempSync(path.join(tmpdir(), 'rs-recheck-')), 'out');
  cpSync(results, d, { recursive: true });
  return d;
}

describe('recheck compares every copy', () => {
  it('an untouched folder: 2 rows x (8 nested + 8 flat + 8 csv + 5 questions x 8) values agree (7 families and judged@k)', async () => {
    const r = await cli('recheck', results);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toContain(`2 configurations, ${2 * (8 + 8 + 8 + 5 * 8)} values re-scored`);
    expect(r.out).toContain('0 disagree');
  });

  it('a flat column of matrix.json edited', async () => {
    const d = copy();
    const m = JSON.parse(readFileSync(path.join(d, 'matrix.json'), 'utf8'));
    m.rows[1].ndcg = m.rows[1].ndcg / 2;
    writeFileSync(path.join(d, 'matrix.json'), JSON.stringify(m));
    const r = await cli('recheck', d);
    expect(r.code).toBe(EXIT.input);
    expect(r.out).toMatch(/1 disagree\n {2}none\.keyword\.k3 ndcg@3: matrix\.json flat holds/);
  });

  it('a cell of matrix.csv edited', async () => {
    const d = copy();
    const file = path.join(d, 'matrix.csv');
    const lines = readFileSync(file, 'utf8').split('\n');
    const col = lines[0].split(',').indexOf('map');
    const cells = lines[1].split(','); // the first row (none.keyword.k1) has no quoted cell
    expect(cells[0]).toBe('none.keyword.k1');
    cells[col] = String(Number(cells[col]) === 0 ? 0.5 : 0);
    lines[1] = cells.join(',');
    writeFileSync(file, lines.join('\n'));
    const r = await cli('recheck', d);
    expect(r.code).toBe(EXIT.input);
    expect(r.out).toMatch(/none\.keyword\.k1 map@1: matrix\.csv holds/);
  });

  it("a question's value in per-query.jsonl edited", async () => {
    const d = copy();
    const file = path.join(d, 'per-query.jsonl');
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const line = lines.find((l) => l.config_id === 'none.keyword.k3')!;
    line.metrics['ndcg@3'] = line.metrics['ndcg@3'] === 0 ? 1 : 0;
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const r = await cli('recheck', d);
    expect(r.code).toBe(EXIT.input);
    expect(r.out).toContain(`none.keyword.k3 ndcg@3 ${line.qid}: per-query.jsonl holds ${line.metrics['ndcg@3']}`);
  });

  it('parseCsv reads quoted cells with commas, quotes and line breaks', () => {
    expect(parseCsv('a,b\n"x, ""y""","1\n2"\n')).toEqual([{ a: 'x, "y"', b: '1\n2' }]);
  });
});
