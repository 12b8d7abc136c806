/**
 * Text documents whose bytes are not what their extension claims (issue 13 §2): binaries, Windows-1252, UTF-16, and
 * HTML entities.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/load/dataset.js';
import { scanDocumentFolder } from '../../src/load/documents.js';
import { decodeDocumentBytes } from '../../src/load/text.js';
import { rejection } from '../helpers/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.resolve(here, '../fixtures/load');
const tmp = mkdtempSync(path.join(tmpdir(), 'rs-text-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder dataset in a fresh temp folder: `files` (relative path → bytes or text) under docs/, and questions. */
function folder(name: string, files: Record<string, string | Uint8Array>, questions = ''): string {
  const root = path.join(tmp, name);
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(root, 'docs', rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  writeFileSync(path.join(root, 'questions.jsonl'), questions);
  return root;
}

/** The start of an ELF executable (what /usr/bin/ls begins with): magic, class, data, version, then NUL padding. */
const ELF = Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x3e, 0x00, ...Buffer.from('GLIBC_2.34 ls --help')]);

describe('decodeDocumentBytes', () => {
  it('valid UTF-8: decoded, a leading BOM dropped, no warning', () => {
    const d = decodeDocumentBytes(Buffer.from('\uFEFFcafé\r\n'), 'a.md');
    expect(d).toEqual({ kind: 'text', text: 'café\r\n', encoding: 'utf-8' });
  });

  it('a NUL byte makes it binary, reporting the first NUL offset', () => {
    const d = decodeDocumentBytes(ELF, '/x/ls.md');
    // bytes 0-6 are 7f 45 4c 46 02 01 01; byte 7 is the first 00
    expect(d).toMatchObject({ kind: 'binary', nulAt: 7 });
    expect(d.kind === 'binary' && d.warning).toContain('/x/ls.md');
  });

  it('UTF-16 with a BOM is decoded (its NUL bytes do not make it binary)', () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Fuse 5 A', 'utf16le')]);
    expect(decodeDocumentBytes(le, 'le.txt')).toEqual({ kind: 'text', text: 'Fuse 5 A', encoding: 'utf-16le' });
    const be = Buffer.from([0xfe, 0xff, 0x00, 0x41, 0x00, 0xe9]); // "A", "é" big endian
    expect(decodeDocumentBytes(be, 'be.txt')).toEqual({ kind: 'text', text: 'Aé', encoding: 'utf-16be' });
  });

  it('the offset named for invalid UTF-8 is the start of the bad sequence', () => {
    // "ok " then E9 (a 3-byte lead) followed by a space, not a continuation byte: offset 3
    const d = decodeDocumentBytes(Buffer.from([0x6f, 0x6b, 0x20, 0xe9, 0x20]), 'f.txt');
    expect(d.kind === 'text' && d.warning).toContain('byte 0xe9 at offset 3');
    // a valid 2-byte "é" (C3 A9) then a lone continuation byte 0x80 at offset 2
    const e = decodeDocumentBytes(Buffer.from([0xc3, 0xa9, 0x80]), 'g.txt');
    expect(e.kind === 'text' && e.warning).toContain('byte 0x80 at offset 2');
    // an overlong encoding of "/" (C0 AF) is invalid at offset 0
    const o = decodeDocumentBytes(Buffer.from([0xc0, 0xaf]), 'h.txt');
    expect(o.kind === 'text' && o.warning).toContain('byte 0xc0 at offset 0');
  });
});

describe('document folders: bytes that are not UTF-8 text', () => {
  it('a binary file renamed .md is skipped with a warning', async () => {
    const root = folder('binary', { 'ls.md': ELF, 'guide.md': '# Guide\nReset the router.\n' });
    const scan = await scanDocumentFolder(path.join(root, 'docs'));
    expect(scan.docs.map((d) => d.id)).toEqual(['guide.md']);
    expect(scan.binary).toEqual(['ls.md']);
    const ds = await loadDataset({ path: root });
    expect(ds.docs.map((d) => d.id)).toEqual(['guide.md']);
    const w = ds.warnings.filter((x) => x.includes('binary'));
    expect(w).toHaveLength(1);
    expect(w[0]).toContain(path.join(root, 'docs', 'ls.md'));
  });

  it('a binary renamed .html is skipped too', async () => {
    const root = folder('binary-html', { 'x.html': ELF, 'a.txt': 'text' });
    expect((await scanDocumentFolder(path.join(root, 'docs'))).binary).toEqual(['x.html']);
  });

  it('a folder whose only readable files are binary -> DATASET_EMPTY', async () => {
    const root = folder('only-binary', { 'ls.md': ELF });
    const e = await rejection(scanDocumentFolder(path.join(root, 'docs')));
    expect(e.code).toBe('DATASET_EMPTY');
  });

  it('Windows-1252 text is decoded with a warning naming the file', async () => {
    // "caf" E9 " " 93 "quoted" 94 " " 80 "5": é, left and right double quotes, the euro sign in Windows-1252
    const bytes = Uint8Array.from([...Buffer.from('caf'), 0xe9, 0x20, 0x93, ...Buffer.from('quoted'), 0x94, 0x20, 0x80, 0x35]);
    const root = folder('cp1252', { 'old.txt': bytes });
    const scan = await scanDocumentFolder(path.join(root, 'docs'));
    expect(scan.docs).toEqual([{ id: 'old.txt', text: 'café \u201Cquoted\u201D \u20AC5' }]);
    expect(scan.recoded).toEqual(['old.txt']);
    expect(scan.warnings).toHaveLength(1);
    expect(scan.warnings[0]).toContain(path.join(root, 'docs', 'old.txt'));
    expect(scan.warnings[0]).toContain('Windows-1252');
    expect(scan.warnings[0]).toContain('offset 3');
  });

  it('valid UTF-8 gives no warning and the same text as before (BOM dropped, CRLF kept)', async () => {
    const root = folder('utf8', { 'a.md': '\uFEFF# Café\r\nline\r\n' });
    const scan = await scanDocumentFolder(path.join(root, 'docs'));
    expect(scan.docs).toEqual([{ id: 'a.md', text: '# Café\r\nline\r\n' }]);
    expect(scan.warnings).toEqual([]);
  });
});

describe('HTML entities', () => {
  it('HTML entities are decoded', async () => {
    const scan = await scanDocumentFolder(path.join(fixtures, 'folder/docs'));
    const page = scan.docs.find((d) => d.id === 'page.html')?.text ?? '';
    expect(page).toContain('Hold the reset & wait.');
    expect(page).not.toContain('&amp;');
  });

  it('named, numeric and hex entities decode after tags are stripped, so &lt;b&gt; stays text', async () => {
    const root = folder('entities', {
      'e.html': '<p>&lt;b&gt; caf&eacute; &#65;&#x42; 5&nbsp;A &amp;amp;</p>',
      'e.md': 'Tom &amp; Jerry &lt;b&gt;',
    });
    const docs = new Map((await scanDocumentFolder(path.join(root, 'docs'))).docs.map((d) => [d.id, d.text]));
    // &amp;amp; decodes once, to the text "&amp;"
    expect(docs.get('e.html')).toBe('<b> café AB 5\u00A0A &amp;');
    // markdown and text are kept as written (offsets refer to the file)
    expect(docs.get('e.md')).toBe('Tom &amp; Jerry &lt;b&gt;');
  });
});

describe('decodeWindows1252', () => {
  it('maps 0x80-0x9F by the WHATWG table (Node 20 TextDecoder gives C1 controls) and other bytes to themselves', async () => {
    const { decodeWindows1252 } = await import('../../src/load/text.js');
    // 80 € , 8A Š, 93 “, 94 ”, 9F Ÿ; 81 unassigned -> U+0081; A0 no-break space, E9 é, FF ÿ, 41 A
    expect(decodeWindows1252(Uint8Array.from([0x80, 0x8a, 0x93, 0x94, 0x9f, 0x81, 0xa0, 0xe9, 0xff, 0x41]))).toBe(
      '\u20AC\u0160\u201C\u201D\u0178\u0081\u00A0\u00E9\u00FFA',
    );
  });
});
