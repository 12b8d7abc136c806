import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSweepResult, writeArtifacts } from '../../src/run/artifacts.js';
import { question, row, spec, sweep } from '../report/fixtures.js';

const root = mkdtempSync(path.join(tmpdir(), 'rs-art-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('results folders keep the run warnings', () => {
  const qs = [question('q1', { a: 1 }), question('q2', { b: 1 })];
  const result = sweep(qs, [row(spec({ mode: 'keyword', k: 5 }), qs, { ndcg: [1, 0] })], {
    warnings: ['config: x', 'dataset: y'],
    manifest: { tool: 'retrieval-sweep', dataset: { warnings: ['dataset: y'] } },
  });

  it('configs.json carries "warnings" and loadSweepResult reads them back in order', () => {
    const dir = path.join(root, 'new');
    writeArtifacts(dir, result, {});
    expect(loadSweepResult(dir).warnings).toEqual(['config: x', 'dataset: y']);
  });

  it('a folder written before the field existed loads with the manifest dataset warnings', () => {
    const dir = path.join(root, 'old');
    writeArtifacts(dir, result, {});
    const file = path.join(dir, 'configs.json');
    const head = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    delete head.warnings;
    writeFileSync(file, JSON.stringify(head));
    expect(loadSweepResult(dir).warnings).toEqual(['dataset: y']);
  });
});
