/**
 * Issue 24 §5: symbolic links in the document folder are reported as links (a folder link not followed, a broken link
 * with its target), not as files whose "extension is not read". The links are made in a temp folder by the test.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/load/dataset.js';
import { scanDocumentFolder } from '../../src/load/documents.js';
import { rejection } from '../helpers/errors.js';

let root: string;
let docs: string;
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-links-'));
  docs = path.join(root, 'docs');
  mkdirSync(path.join(docs, 'faq'), { recursive: true });
  mkdirSync(path.join(root, 'elsewhere'));
  writeFileSync(path.join(docs, 'a.md'), 'Refunds take five days.');
  writeFileSync(path.join(docs, 'faq', 'b.md'), 'The pump runs at 3 bar.');
  writeFileSync(path.join(root, 'elsewhere', 'c.md'), 'Outside the folder.');
  writeFileSync(path.join(root, 'elsewhere', 'prices.csv'), 'a,b');
  symlinkSync(path.join(root, 'elsewhere', 'c.md'), path.join(docs, 'c.md')); // link to a file: read
  symlinkSync(path.join(root, 'elsewhere', 'prices.csv'), path.join(docs, 'prices.csv')); // link to a file not read: extension
  symlinkSync(path.join(root, 'elsewhere'), path.join(docs, 'more')); // link to a folder: not followed
  symlinkSync(docs, path.join(docs, 'faq', 'loop')); // a cycle
  symlinkSync(path.join(root, 'gone.md'), path.join(docs, 'broken.md')); // broken
  symlinkSync('nowhere', path.join(docs, 'faq', 'dangling')); // broken, relative target
  writeFileSync(path.join(root, 'questions.jsonl'), '{"id": "q1", "question": "refund", "relevant": ["a.md"]}\n');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('links in the document folder', () => {
  it('the scan lists folder links and broken links apart from skipped extensions', async () => {
    const scan = await scanDocumentFolder(docs);
    expect(scan.docs.map((d) => d.id)).toEqual(['a.md', 'c.md', 'faq/b.md']);
    expect(scan.skipped).toEqual(['prices.csv']);
    expect(scan.folderLinks).toEqual(['faq/loop', 'more']);
    expect(scan.brokenLinks).toEqual([
      { path: 'broken.md', target: path.join(root, 'gone.md') },
      { path: 'faq/dangling', target: 'nowhere' },
    ]);
  });

  it('loadDataset warns about them as links, and "extension not read" names only the csv', async () => {
    const ds = await loadDataset({ path: root });
    expect(ds.warnings).toContain(
      `${docs}: 2 link(s) to a folder not followed (faq/loop, more); links to folders are never followed (a link can make a cycle): move or copy the folder into docs/, or link its files`,
    );
    expect(ds.warnings).toContain(
      `${docs}: 2 broken link(s) skipped (broken.md -> ${path.join(root, 'gone.md')}, faq/dangling -> nowhere); their target does not exist: fix or remove the links`,
    );
    const ext = ds.warnings.filter((w) => w.includes('extension not read'));
    expect(ext).toHaveLength(1);
    expect(ext[0]).toContain('1 file(s) skipped, extension not read (prices.csv)');
  });

  it('a folder of nothing but links is DATASET_EMPTY naming them', async () => {
    const only = path.join(root, 'only');
    mkdirSync(only);
    symlinkSync(path.join(root, 'elsewhere'), path.join(only, 'dir'));
    symlinkSync(path.join(root, 'gone.md'), path.join(only, 'x.md'));
    const e = await rejection(scanDocumentFolder(only));
    expect(e.code).toBe('DATASET_EMPTY');
    expect(e.message).toContain('1 link(s) to a folder not followed: dir');
    expect(e.message).toContain('1 broken link(s): x.md');
  });
});
