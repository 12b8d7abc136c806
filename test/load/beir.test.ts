import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { loadBeir } from '../../src/load/beir.js';
import { isStored } from '../../src/load/text-store.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '../fixtures/load');


describe('loadBeir', () => {
  it.each(['beir-header', 'beir-noheader'])('%s: qrels with or without a header line load the same', async (name) => {
    const { docs, questions, warnings } = await loadBeir(path.join(fixtures, name), 'test');
    // q9 has no qrels row: counted in the one warning (3 queries - 2 judged = 1)
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('1 of 3 queries have no judgement');
    // code-unit order: "d1" < "d10" < "d2"
    expect(docs).toEqual([
      { id: 'd1', text: 'Warranty lasts two years.' },
      { id: 'd10', text: 'Routers reset with a pin.' },
      { id: 'd2', text: 'Fuses' + '\n\n' + 'The pump takes a 5 A fuse.' },
    ]);
    // only judged queries, in queries.jsonl order (q2 on line 1, q1 on line 2); q9 is unjudged
    expect(questions).toEqual([
      { id: 'q2', text: 'pump fuse', relevant: { d2: 2, d10: 0 }, evidence: [], tags: [], line: 1 },
      { id: 'q1', text: 'warranty length', relevant: { d1: 1 }, evidence: [], tags: [], line: 2 },
    ]);
  });

  it('missing split -> DATASET_NOT_FOUND listing the splits present', async () => {
    const e = await rejection(loadBeir(path.join(fixtures, 'beir-header'), 'dev'));
    expect(e.code).toBe('DATASET_NOT_FOUND');
    expect(e.location.file).toBe(path.join(fixtures, 'beir-header/qrels/dev.tsv'));
    expect(e.remedy).toContain('test');
  });

  it('strict: qrels rows naming a missing document or query -> LABEL_INVALID listing each', async () => {
    const e = await rejection(loadBeir(path.join(fixtures, 'beir-dangling'), 'test'));
    expect(e.code).toBe('LABEL_INVALID');
    expect(e.message).toContain('q2 -> d404 not found in corpus');
    expect(e.message).toContain('query q7 not found');
  });

  it('keep: a missing document stays as an unretrievable label; a missing query is left out; one warning each', async () => {
    const { questions, warnings } = await loadBeir(path.join(fixtures, 'beir-dangling'), 'test', { labels: 'keep' });
    expect(questions.map((q) => [q.id, q.relevant])).toEqual([
      ['q2', { d2: 2, d404: 1 }],
      ['q1', { d1: 1 }],
    ]);
    // q7 (missing query), d404 (missing document), and the unjudged q9 counted
    expect(warnings).toHaveLength(3);
    expect(warnings[2]).toContain('1 of 3 queries have no judgement');
  });

  it('drop: a missing document is removed; a missing query is left out; one warning each', async () => {
    const { questions, warnings } = await loadBeir(path.join(fixtures, 'beir-dangling'), 'test', { labels: 'drop' });
    expect(questions.map((q) => [q.id, q.relevant])).toEqual([
      ['q2', { d2: 2 }],
      ['q1', { d1: 1 }],
    ]);
    expect(warnings).toHaveLength(3);
  });
});

describe('loadBeir: documents given twice', () => {
  /** A BEIR folder in a temporary directory: corpus lines as given, one query judging d2. */
  function folder(corpus: string[]): string {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-beir-dup-'));
    mkdirSync(path.join(root, 'qrels'));
    writeFileSync(path.join(root, 'corpus.jsonl'), corpus.join('\n') + '\n');
    writeFileSync(path.join(root, 'queries.jsonl'), '{"_id": "q1", "text": "pump"}\n');
    writeFileSync(path.join(root, 'qrels', 'test.tsv'), 'q1\td2\t1\n');
    return root;
  }

  for (const stored of [false, true]) {
    it(`${stored ? 'in a text store' : 'in memory'}: the same text again collapses with a warning naming both lines; the documents come out in id order`, async () => {
      const root = folder([
        '{"_id": "d2", "text": "pump fuse"}',
        '{"_id": "d10", "title": "T", "text": "reset"}',
        '{"_id": "d2", "text": "pump fuse"}',
        '{"_id": "d1", "text": "warranty \u00e9t\u00e9 \u2603"}',
      ]);
      try {
        const { docs, warnings } = await loadBeir(root, 'test', stored ? { textStore: { dir: path.join(root, 'store'), residentBytes: 0 } } : {});
        expect(isStored(docs)).toBe(stored);
        expect(warnings).toEqual([`${path.join(root, 'corpus.jsonl')}:3: duplicate document d2 collapsed (same as line 1)`]);
        // code-unit order: "d1" < "d10" < "d2"
        expect(docs.map((d) => [d.id, d.text])).toEqual([
          ['d1', 'warranty \u00e9t\u00e9 \u2603'],
          ['d10', 'T\n\nreset'],
          ['d2', 'pump fuse'],
        ]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });

    it(`${stored ? 'in a text store' : 'in memory'}: another text under the same id -> DOCUMENT_INVALID naming both lines`, async () => {
      const root = folder(['{"_id": "d2", "text": "pump fuse"}', '{"_id": "d1", "text": "x"}', '{"_id": "d2", "text": "pump fuses"}']);
      try {
        const e = await rejection(loadBeir(root, 'test', stored ? { textStore: { dir: path.join(root, 'store'), residentBytes: 0 } } : {}));
        expect(e.code).toBe('DOCUMENT_INVALID');
        expect(e.message).toBe('two different documents share _id d2 (lines 1 and 3)');
        expect(e.location).toEqual({ file: path.join(root, 'corpus.jsonl'), line: 3 });
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  }
});

const datasets = path.resolve(here, '../../../shared/datasets');

describe.skipIf(!existsSync(path.join(datasets, 'scifact')))('real data: scifact (BEIR, qrels header)', () => {
  it('test split: 5,183 docs, 300 questions, 339 judgements, all grade 1', async () => {
    const { docs, questions, warnings } = await loadBeir(path.join(datasets, 'scifact'), 'test');
    // queries.jsonl holds the train and test queries: 1,109 - 300 judged by test = 809 left out, in one warning
    expect(warnings).toEqual([
      `${path.join(datasets, 'scifact', 'queries.jsonl')}: 809 of 1109 queries have no judgement in qrels/test.tsv and are left out ` +
        '(BEIR shares queries.jsonl between splits; each split judges its own queries)',
    ]);
    expect(docs).toHaveLength(5183);
    expect(questions).toHaveLength(300);
    const grades = questions.flatMap((q) => Object.values(q.relevant));
    expect(grades).toHaveLength(339);
    expect(new Set(grades)).toEqual(new Set([1]));
  });
});

describe.skipIf(!existsSync(path.join(datasets, 'trec-dl-2019-5k')))('real data: trec-dl-2019-5k (BEIR, no qrels header)', () => {
  it('43 judged questions with grades 1-3 and 5,000 docs', async () => {
    const { docs, questions } = await loadBeir(path.join(datasets, 'trec-dl-2019-5k'), 'test');
    expect(docs).toHaveLength(5000);
    expect(questions).toHaveLength(43);
    const grades = new Set(questions.flatMap((q) => Object.values(q.relevant)));
    expect([...grades].sort()).toEqual([1, 2, 3]);
  });
});
