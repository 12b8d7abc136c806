/**
 * Issue 13: a question whose every relevant document yields no chunk is reported as unanswerable, by id, in the
 * warnings the terminal prints and the report lists (not silently scored 0 as if retrieval had failed).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { analyze } from '../../src/report/analyze.js';
import { renderReports } from '../../src/report/render.js';

describe('unanswerable questions', () => {
  it('a question whose only relevant document is empty is named in the warnings and in report.md', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-unans-'));
    mkdirSync(path.join(root, 'qrels'));
    writeFileSync(
      path.join(root, 'corpus.jsonl'),
      [
        { _id: 'empty', title: '', text: '' },
        { _id: 'pump', title: 'Pump', text: 'The pump seal kit is replaced every 500 hours.' },
        { _id: 'filter', title: 'Filter', text: 'Clean the filter every week.' },
      ]
        .map((d) => JSON.stringify(d))
        .join('\n') + '\n',
    );
    writeFileSync(path.join(root, 'queries.jsonl'), [{ _id: 'q1', text: 'seal kit' }, { _id: 'q2', text: 'empty page' }].map((q) => JSON.stringify(q)).join('\n') + '\n');
    writeFileSync(path.join(root, 'qrels', 'test.tsv'), 'query-id\tcorpus-id\tscore\nq1\tpump\t1\nq2\tempty\t1\n');
    const config = parseConfig({
      dataset: { path: root, split: 'test' },
      topK: [1],
      modes: ['keyword'],
      primaryMetric: 'ndcg@1',
      cacheDir: path.join(root, 'cache'),
    });
    const { result } = await runSweep(config);
    const warning = (result.warnings ?? []).find((w) => w.includes('unanswerable'));
    expect(warning).toBeDefined();
    expect(warning).toContain('chunking none: 1 question(s) are unanswerable');
    expect(warning).toMatch(/: q2$/);
    const md = renderReports(result, analyze(result))['report.md'];
    expect(md).toContain('1 question(s) are unanswerable, every relevant document yields no chunk (empty text): q2');
  });
});
