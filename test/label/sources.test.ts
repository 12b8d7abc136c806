import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { judgeUsagePath, judgmentsLogPath, openJudgmentLog, type Judgment } from '../../src/label/formats.js';
import { labelSources } from '../../src/label/sources.js';
import { labelSourcesSentence } from '../../src/report/labels.js';
import type { Question, SweepResult } from '../../src/types.js';

const j = (assessor: string, doc: string, grade: number): Judgment => ({
  v: 1, time: '2026-12-03T00:00:00.000Z', assessor, action: 'grade', qid: 'q1', doc, start: 0, end: 5, grade,
});
const q = (relevant: Record<string, number>): Question => ({ id: 'q1', text: 'Q?', relevant, evidence: [], tags: [], line: 1 });

describe('labelSources: where the loaded labels came from (issue 21)', () => {
  it('counts a person\'s and a model\'s grades that the labels file holds, the log lines it does not, and sums the judge runs per model', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-sources-'));
    const labels = path.join(root, 'questions.jsonl');
    writeFileSync(labels, '');
    const log = openJudgmentLog(judgmentsLogPath(labels));
    // b: model 1 then person 2 (the person wins, and the file holds 2); a: model 1 (file holds 1); c: model 3, not merged.
    log.append(j('llm:m', 'b', 1), j('alice', 'b', 2), j('llm:m', 'a', 1), j('llm:m', 'c', 3));
    log.close();
    appendFileSync(judgeUsagePath(labels), `${JSON.stringify({ model: 'm', requests: 3, retries: 1, waitSeconds: 0.5, tokensIn: 100, tokensOut: 10, cost: 0.25 })}\n`);
    appendFileSync(judgeUsagePath(labels), `${JSON.stringify({ model: 'm', requests: 4, retries: 0, waitSeconds: 0, tokensIn: 50, tokensOut: 5, cost: 0.5 })}\nnot json\n`);
    const s = labelSources({ root, layout: 'folder', questions: [q({ a: 1, b: 2, d: 0 })] });
    expect([s.loaded, s.human, s.llm, s.notMerged]).toEqual([3, 1, 1, 1]);
    expect(s.judge).toHaveLength(1);
    expect(s.judge[0].runs).toBe(2);
    expect(s.judge[0].requests).toBe(3 + 4);
    expect(s.judge[0].tokensIn).toBe(100 + 50);
    expect(s.judge[0].cost).toBeCloseTo(0.25 + 0.5, 10);
    const sentence = labelSourcesSentence({ manifest: { labels: s } } as unknown as SweepResult);
    expect(sentence).toContain('3 document label(s) loaded: 1 from the dataset as written, 1 graded by a person and 1 by a model');
    expect(sentence).toContain('1 judgment(s) in the log are not in the labels file');
    expect(sentence).toContain('Judge m: 2 run(s), 7 request(s) (1 retried), 150 tokens in, 15 out, 0.5 s waited, cost 0.7500.');
  });

  it('no log and no judge run: nothing to say', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-sources-'));
    const s = labelSources({ root, layout: 'beir', split: 'test', questions: [q({ a: 1 })] });
    expect(s.file).toBe(path.join(root, 'qrels', 'test.tsv'));
    expect(s.log).toBeNull();
    expect(labelSourcesSentence({ manifest: { labels: s } } as unknown as SweepResult)).toBeNull();
    expect(labelSourcesSentence({ manifest: {} } as unknown as SweepResult)).toBeNull();
  });
});
