/** Issue 24 §5: `evaluate` with no judged question is an error (exit 1), not an empty table with exit 0. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EXIT, runCli } from '../../src/cli/main.js';

describe('evaluate with no judged question', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-eval-empty-'));
  const run = path.join(dir, 'run.trec');
  writeFileSync(run, 'q1 Q0 d1 1 2 r\nq1 Q0 d2 2 1 r\n');
  async function evaluate(qrels: string, ...extra: string[]): Promise<{ code: number; err: string }> {
    let err = '';
    const code = await runCli(['node', 'retrieval-sweep', 'evaluate', qrels, run, ...extra], { stdout: () => {}, stderr: (s) => void (err += s) });
    process.exitCode = undefined;
    return { code, err };
  }

  it('an empty qrels file exits 1 naming it', async () => {
    const qrels = path.join(dir, 'empty.qrels');
    writeFileSync(qrels, '');
    const r = await evaluate(qrels);
    expect(r.code).toBe(EXIT.input);
    expect(r.err).toContain(`${qrels}: no question could be scored (0 question(s) in the qrels, 0 with no judgement of grade >= 1, 1 run question(s) not in the qrels)`);
  });

  it('judgements all below the threshold exit 1; at the threshold the same files score', async () => {
    const qrels = path.join(dir, 'low.qrels');
    writeFileSync(qrels, 'q1 0 d1 1\n');
    expect((await evaluate(qrels, '--threshold', '2')).code).toBe(EXIT.input);
    expect((await evaluate(qrels)).code).toBe(EXIT.ok);
  });
});
