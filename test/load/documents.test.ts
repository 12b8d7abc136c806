import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isHarnessError, type HarnessError } from '../../src/errors.js';
import { DOCUMENT_UNREADABLE, loadDocumentFolder, scanDocumentFolder } from '../../src/load/documents.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '../fixtures/load');
const docsDir = path.join(fixtures, 'folder/docs');


describe('loadDocumentFolder', () => {
  it('reads md, txt, html, pdf and docx; ids are relative paths with /, sorted by code units; hidden skipped', async () => {
    const docs = await loadDocumentFolder(docsDir);
    expect(docs.map((d) => d.id)).toEqual([
      'faq/payments/cards.md',
      'letter.docx',
      'manual.pdf',
      'notes.txt',
      'page.html',
      'refunds.md',
    ]);
  });

  it('.md and .txt keep the RAW file text (MarkdownReader would split by headers; CRLF is kept)', async () => {
    const docs = new Map((await loadDocumentFolder(docsDir)).map((d) => [d.id, d.text]));
    expect(docs.get('refunds.md')).toBe(readFileSync(path.join(docsDir, 'refunds.md'), 'utf8'));
    expect(docs.get('notes.txt')).toBe('Router notes\r\nHold reset for 10 seconds.\r\n');
  });

  it('a PDF with two pages becomes one Doc with the page texts joined by a blank line', async () => {
    const docs = new Map((await loadDocumentFolder(docsDir)).map((d) => [d.id, d.text]));
    expect(docs.get('manual.pdf')).toBe('Pump manual page one.' + '\n\n' + 'The fuse rating is 5 A.');
  });

  it('docx is mammoth raw text: each paragraph ends with a blank line', async () => {
    const docs = new Map((await loadDocumentFolder(docsDir)).map((d) => [d.id, d.text]));
    expect(docs.get('letter.docx')).toBe('Dear customer,\n\nYour warranty lasts two years.\n\n');
  });

  it('html drops head, style and script with their contents', async () => {
    const text = new Map((await loadDocumentFolder(docsDir)).map((d) => [d.id, d.text])).get('page.html') ?? '';
    expect(text).toContain('Router');
    expect(text).not.toContain('Hidden title');
    expect(text).not.toContain('color');
    expect(text).not.toContain('track');
    expect(text).not.toContain('<');
  });

  it('files with other extensions are skipped and listed; hidden files are not listed', async () => {
    const scan = await scanDocumentFolder(docsDir);
    expect(scan.skipped).toEqual(['prices.csv']);
    expect(scan.empty).toEqual([]);
  });

  it('missing folder -> DATASET_NOT_FOUND naming the resolved path', async () => {
    const missing = path.join(fixtures, 'no-such-folder');
    const e = await rejection(loadDocumentFolder(missing));
    expect(e.code).toBe('DATASET_NOT_FOUND');
    expect(e.location.file).toBe(missing);
  });

  it('a folder with no readable extension -> DATASET_EMPTY naming the folder', async () => {
    const e = await rejection(loadDocumentFolder(path.join(fixtures, 'empty/docs')));
    expect(e.code).toBe('DATASET_EMPTY');
    expect(e.location.file).toBe(path.join(fixtures, 'empty/docs'));
    expect(e.remedy).toContain('.docx');
  });

  it('a file that fails to parse names the file', async () => {
    const e = await rejection(loadDocumentFolder(path.join(fixtures, 'broken/docs')));
    expect(e.code).toBe(DOCUMENT_UNREADABLE);
    expect(e.location.file).toBe(path.join(fixtures, 'broken/docs/bad.pdf'));
    expect(e.message).toContain('bad.pdf');
  });

  it('fixtures stay small (< 20 KB of binary fixtures)', () => {
    for (const f of ['manual.pdf', 'letter.docx']) expect(existsSync(path.join(docsDir, f))).toBe(true);
    const bytes = readFileSync(path.join(docsDir, 'manual.pdf')).length + readFileSync(path.join(docsDir, 'letter.docx')).length;
    expect(bytes).toBeLessThan(20_000);
  });
});
