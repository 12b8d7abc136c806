import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { fingerprintDataset, loadDataset } from '../../src/load/dataset.js';
import type { Doc, Question } from '../../src/types.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '../fixtures/load');


describe('loadDataset: folder layout (docs/ + questions.jsonl)', () => {
  it('relative path resolves against baseDir; name defaults to the folder name; skipped files warned', async () => {
    const ds = await loadDataset({ path: 'folder' }, { baseDir: fixtures });
    expect(ds.layout).toBe('folder');
    expect(ds.root).toBe(path.join(fixtures, 'folder'));
    expect(ds.name).toBe('folder');
    expect(ds.split).toBeUndefined();
    expect(ds.docs.map((d) => d.id)).toEqual([
      'faq/payments/cards.md',
      'letter.docx',
      'manual.pdf',
      'notes.txt',
      'page.html',
      'refunds.md',
    ]);
    expect(ds.warnings).toHaveLength(1);
    expect(ds.warnings[0]).toContain('prices.csv');
    expect(ds.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('questions: evidence located in the raw markdown, occurrence 2 of a repeated passage, numeric id', async () => {
    const ds = await loadDataset({ path: path.join(fixtures, 'folder'), name: 'fixture' });
    expect(ds.name).toBe('fixture');
    const refunds = readFileSync(path.join(fixtures, 'folder/docs/refunds.md'), 'utf8');
    const cards = readFileSync(path.join(fixtures, 'folder/docs/faq/payments/cards.md'), 'utf8');
    const [q1, q2, q3] = ds.questions;
    expect(q1.evidence[0].start).toBe(refunds.indexOf('Refunds are paid'));
    expect(q1.evidence[0].end).toBe(refunds.indexOf('return.') + 'return.'.length);
    expect(q1.relevant).toEqual({ 'refunds.md': 2 });
    expect(q2.id).toBe('2');
    expect(q2.line).toBe(3);
    expect(q3.evidence[0].start).toBe(cards.lastIndexOf('Contact support.'));
    expect(q3.relevant).toEqual({ 'faq/payments/cards.md': 2 });
  });

  it('missing dataset folder -> DATASET_NOT_FOUND naming the resolved path', async () => {
    const e = await rejection(loadDataset({ path: 'nowhere' }, { baseDir: fixtures }));
    expect(e.code).toBe('DATASET_NOT_FOUND');
    expect(e.location.file).toBe(path.join(fixtures, 'nowhere'));
  });

  it('folder with only unread extensions -> DATASET_EMPTY', async () => {
    const e = await rejection(loadDataset({ path: 'empty' }, { baseDir: fixtures }));
    expect(e.code).toBe('DATASET_EMPTY');
  });

  it('a folder with neither docs/ nor corpus.jsonl -> DATASET_NOT_FOUND', async () => {
    const e = await rejection(loadDataset({ path: 'folder/docs/faq' }, { baseDir: fixtures }));
    expect(e.code).toBe('DATASET_NOT_FOUND');
  });

  it('an unknown labels policy -> CONFIG_INVALID', async () => {
    const e = await rejection(loadDataset({ path: 'folder', labels: 'lenient' as never }, { baseDir: fixtures }));
    expect(e.code).toBe('CONFIG_INVALID');
  });
});

describe('loadDataset: BEIR layout', () => {
  it('detects corpus.jsonl, defaults split to test', async () => {
    const ds = await loadDataset({ path: 'beir-header' }, { baseDir: fixtures });
    expect(ds.layout).toBe('beir');
    expect(ds.split).toBe('test');
    expect(ds.questions.map((q) => q.id)).toEqual(['q2', 'q1']);
  });

  it('labels policy reaches the BEIR loader', async () => {
    expect((await rejection(loadDataset({ path: 'beir-dangling' }, { baseDir: fixtures }))).code).toBe('LABEL_INVALID');
    const ds = await loadDataset({ path: 'beir-dangling', labels: 'drop' }, { baseDir: fixtures });
    expect(ds.questions[0].relevant).toEqual({ d2: 2 });
  });

  it('header and header-less copies of one dataset have the same fingerprint', async () => {
    const a = await loadDataset({ path: 'beir-header' }, { baseDir: fixtures });
    const b = await loadDataset({ path: 'beir-noheader' }, { baseDir: fixtures });
    expect(a.fingerprint).toBe(b.fingerprint);
  });
});

describe('fingerprintDataset', () => {
  const docs: Doc[] = [
    { id: 'b.md', text: 'B' },
    { id: 'a.md', text: 'A' },
  ];
  const q: Question = { id: 'q1', text: 'x?', relevant: { 'a.md': 1, 'b.md': 2 }, evidence: [], tags: [], line: 1 };

  it('does not depend on document order or label key order, and ignores tags and lines', () => {
    const base = fingerprintDataset(docs, [q]);
    expect(fingerprintDataset([...docs].reverse(), [q])).toBe(base);
    expect(fingerprintDataset(docs, [{ ...q, relevant: { 'b.md': 2, 'a.md': 1 }, tags: ['t'], line: 9 }])).toBe(base);
  });

  it('changes when a text, a grade or a boundary between fields changes', () => {
    const base = fingerprintDataset(docs, [q]);
    expect(fingerprintDataset([{ id: 'a.md', text: 'A!' }, docs[0]], [q])).not.toBe(base);
    expect(fingerprintDataset(docs, [{ ...q, relevant: { 'a.md': 1, 'b.md': 1 } }])).not.toBe(base);
    // moving a character from id to text must not collide
    expect(fingerprintDataset([{ id: 'a.m', text: 'dA' }, docs[0]], [q])).not.toBe(fingerprintDataset([{ id: 'a.md', text: 'A' }, docs[0]], [q]));
  });

  it('does not reorder its input', () => {
    const input = [...docs];
    fingerprintDataset(input, [q]);
    expect(input.map((d) => d.id)).toEqual(['b.md', 'a.md']);
  });
});
