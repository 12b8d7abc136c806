/**
 * Reading a folder of documents with LlamaIndex readers (`@llamaindex/readers`), one {@link Doc} per file.
 *
 * Reader per extension (case-insensitive):
 * - `.md`, `.markdown`, `.txt`: `TextFileReader`, i.e. the RAW file text decoded as UTF-8 (a leading BOM is dropped;
 *   CRLF line ends are kept). LlamaIndex's `MarkdownReader` is deliberately not used: it splits by headers and
 *   rewrites the text, and evidence ranges and chunk offsets must refer to the file as written.
 * - `.html`, `.htm`: `HTMLReader` (string-strip-html): head/script/style/xml removed with their contents, other tags
 *   removed, inner text kept. Quirk: HTML entities are NOT decoded (`&amp;` stays `&amp;`).
 * - `.pdf`: `PDFReader` (unpdf / pdf.js), one LlamaIndex document per page; pages joined with `"\n\n"`.
 *   Quirk: pdf.js writes a warning to the console for malformed PDFs before it throws.
 * - `.docx`: `DocxReader` (mammoth raw text): paragraphs end with `"\n\n"`, including the last one.
 * When a reader returns several documents for one file, their texts are joined with `"\n\n"` into one Doc.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { TextFileReader } from '@llamaindex/readers/text';
import { HTMLReader } from '@llamaindex/readers/html';
import { PDFReader } from '@llamaindex/readers/pdf';
import { DocxReader } from '@llamaindex/readers/docx';
import { HarnessError, type ErrorCode } from '../errors.js';
import type { Doc } from '../types.js';

/** File extensions that are read (lower case, with the dot). Every other file is skipped and reported. */
export const READ_EXTENSIONS: readonly string[] = ['.md', '.markdown', '.txt', '.html', '.htm', '.pdf', '.docx'];

/**
 * Code for a document file that exists but cannot be parsed. errors.ts has no dedicated code yet (a
 * `DOCUMENT_INVALID` was requested); `DATASET_EMPTY` ("no readable documents") is the closest existing one.
 */
export const DOCUMENT_UNREADABLE: ErrorCode = 'DOCUMENT_INVALID';

/** Files read concurrently (PDF and DOCX parsing is asynchronous). */
const CONCURRENCY = 8;

interface Reader {
  loadDataAsContent(content: Uint8Array): Promise<{ text: string }[]>;
}

const textReader = new TextFileReader();
const htmlReader = new HTMLReader();
const pdfReader = new PDFReader();
const docxReader = new DocxReader();

function readerFor(ext: string): Reader | undefined {
  switch (ext) {
    case '.md':
    case '.markdown':
    case '.txt':
      return textReader;
    case '.html':
    case '.htm':
      return htmlReader;
    case '.pdf':
      return pdfReader;
    case '.docx':
      return docxReader;
    default:
      return undefined;
  }
}

/** What {@link scanDocumentFolder} found. */
export interface DocumentFolderScan {
  /** One Doc per readable file, sorted by id (UTF-16 code-unit order). */
  docs: Doc[];
  /** Relative paths (forward slashes, sorted) of visible files whose extension is not read. */
  skipped: string[];
  /** Ids of docs whose text is empty or whitespace only (kept in `docs`). */
  empty: string[];
}

/**
 * Reads every visible file under `dir` (recursively) whose extension is in {@link READ_EXTENSIONS}.
 * Doc id = path relative to `dir` with forward slashes (`faq/payments.md`). Names starting with `.` (files and
 * folders) are ignored entirely; symbolic links to files are read, symbolic links to folders are skipped.
 *
 * @throws HarnessError `DATASET_NOT_FOUND` when `dir` does not exist or is not a folder (names the resolved path);
 *   `DATASET_EMPTY` when no file has a read extension (lists the extensions); {@link DOCUMENT_UNREADABLE} when a
 *   reader fails on a file (names the file, the reader's message is in `cause`).
 */
export async function scanDocumentFolder(dir: string): Promise<DocumentFolderScan> {
  const root = path.resolve(dir);
  const st = await stat(root).catch(() => undefined);
  if (st === undefined || !st.isDirectory()) {
    throw new HarnessError(
      'DATASET_NOT_FOUND',
      st === undefined ? `document folder ${root} does not exist` : `${root} is not a folder`,
      { location: { file: root }, remedy: 'point the dataset path at a folder holding docs/ and questions.jsonl' },
    );
  }
  const files: string[] = [];
  const skipped: string[] = [];
  await walk(root, '', files, skipped);
  if (files.length === 0) {
    throw new HarnessError(
      'DATASET_EMPTY',
      `no readable documents in ${root}` +
        (skipped.length > 0 ? ` (${skipped.length} file(s) with other extensions skipped)` : ''),
      { location: { file: root }, remedy: `add files with one of the extensions ${READ_EXTENSIONS.join(', ')}` },
    );
  }
  const limit = pLimit(CONCURRENCY);
  const docs = await Promise.all(files.map((id) => limit(() => readOne(root, id))));
  docs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  skipped.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const empty = docs.filter((d) => d.text.trim().length === 0).map((d) => d.id);
  return { docs, skipped, empty };
}

/**
 * Reads a folder of documents; see {@link scanDocumentFolder} for the rules and errors.
 * @returns Docs sorted by id (UTF-16 code-unit order); `text` is exactly what evidence ranges refer to.
 */
export async function loadDocumentFolder(dir: string): Promise<Doc[]> {
  return (await scanDocumentFolder(dir)).docs;
}

async function walk(abs: string, rel: string, files: string[], skipped: string[]): Promise<void> {
  const entries = await readdir(abs, { withFileTypes: true });
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const childAbs = path.join(abs, e.name);
    const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
    let isDir = e.isDirectory();
    let isFile = e.isFile();
    if (e.isSymbolicLink()) {
      const target = await stat(childAbs).catch(() => undefined);
      isFile = target?.isFile() ?? false;
      isDir = false; // never follow folder links (cycles)
      if (!isFile) {
        skipped.push(childRel);
        continue;
      }
    }
    if (isDir) await walk(childAbs, childRel, files, skipped);
    else if (isFile) {
      if (readerFor(path.extname(e.name).toLowerCase()) !== undefined) files.push(childRel);
      else skipped.push(childRel);
    }
  }
}

async function readOne(root: string, id: string): Promise<Doc> {
  const file = path.join(root, ...id.split('/'));
  const reader = readerFor(path.extname(id).toLowerCase());
  if (reader === undefined) throw new Error(`no reader for ${id}`); // walk() only lists read extensions
  let parts: { text: string }[];
  try {
    const bytes = new Uint8Array(await readFile(file));
    parts = await reader.loadDataAsContent(bytes);
  } catch (cause) {
    throw new HarnessError(
      DOCUMENT_UNREADABLE,
      `cannot read document ${id}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { location: { file }, remedy: 'repair or remove the file (or move it out of the docs folder)', cause },
    );
  }
  return { id, text: parts.map((p) => p.text).join('\n\n') };
}
