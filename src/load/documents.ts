/**
 * Reading a folder of documents with LlamaIndex readers (`@llamaindex/readers`), one {@link Doc} per file.
 *
 * Reader per extension (case-insensitive):
 * - `.md`, `.markdown`, `.txt`: the RAW file text, decoded by text.ts {@link decodeDocumentBytes}: UTF-8 (a leading
 *   BOM is dropped; CRLF line ends are kept), UTF-16 with a BOM, or, for bytes that are not valid UTF-8,
 *   Windows-1252 with a warning naming the file; a file holding a NUL byte is binary and skipped with a warning.
 *   (LlamaIndex's `TextFileReader` decodes with a non-fatal UTF-8 decoder, so it turned a binary into U+FFFD soup
 *   without a word.) LlamaIndex's `MarkdownReader` is deliberately not used: it splits by headers and rewrites the
 *   text, and evidence ranges and chunk offsets must refer to the file as written. Entities are not decoded here.
 * - `.html`, `.htm`: bytes decoded as above, then `HTMLReader.parseContent` (string-strip-html with LlamaIndex's
 *   options): head/script/style/xml removed with their contents, other tags removed, inner text kept; then HTML
 *   entities decoded (`&amp;` → `&`, `&nbsp;` → U+00A0) by html-entities (HTML5 table). LlamaIndex's reader leaves
 *   them encoded (`skipHtmlDecoding: true`); decoding after stripping keeps `&lt;b&gt;` as the text `<b>`.
 * - `.pdf`: unpdf (pdf.js) as LlamaIndex's `PDFReader` calls it (`extractText`, one text per page), pages joined with
 *   `"\n\n"`; but with pdf.js's `verbosity: 0`. Quirk: at its default level pdf.js writes warnings to the console
 *   (`console.log`, so stdout, the data channel) for malformed PDFs, e.g. `Warning: Indexing all PDF objects` before it
 *   throws "Invalid PDF structure"; library code never prints (test/load/no-print.test.ts).
 * - `.docx`: `DocxReader` (mammoth raw text): paragraphs end with `"\n\n"`, including the last one.
 * When a reader returns several documents for one file, their texts are joined with `"\n\n"` into one Doc.
 */
import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import pLimit from 'p-limit';
import { decode as decodeEntities } from 'html-entities';
import { HTMLReader } from '@llamaindex/readers/html';
import { DocxReader } from '@llamaindex/readers/docx';
import { HarnessError, type ErrorCode } from '../errors.js';
import type { Doc } from '../types.js';
import { decodeDocumentBytes } from './text.js';

/** File extensions that are read (lower case, with the dot). Every other file is skipped and reported. */
export const READ_EXTENSIONS: readonly string[] = ['.md', '.markdown', '.txt', '.html', '.htm', '.pdf', '.docx'];

/**
 * Code for a document file that exists but cannot be parsed. errors.ts has no dedicated code yet (a
 * `DOCUMENT_INVALID` was requested); `DATASET_EMPTY` ("no readable documents") is the closest existing one.
 */
export const DOCUMENT_UNREADABLE: ErrorCode = 'DOCUMENT_INVALID';

/**
 * Files read concurrently (PDF and DOCX parsing is asynchronous). Each task reads one file, decodes and converts it
 * and drops its bytes, so at most this many files' bytes are in memory at once, whatever the folder's size.
 */
const CONCURRENCY = 8;

/** What a reader made of one file: its text, or a reason to skip it; `warning` names the file. */
type ReadResult = { text: string; warning?: string } | { skip: string };

interface Reader {
  /** `file` is the absolute path, used in warnings. */
  read(bytes: Uint8Array, file: string): Promise<ReadResult>;
}

/** LlamaIndex's binary readers: one or more documents per file, joined with a blank line. */
function llamaReader(r: { loadDataAsContent(content: Uint8Array): Promise<{ text: string }[]> }): Reader {
  return { read: async (bytes) => ({ text: (await r.loadDataAsContent(bytes)).map((p) => p.text).join('\n\n') }) };
}

const htmlReader = new HTMLReader();

const textReader: Reader = {
  read: async (bytes, id) => {
    const d = decodeDocumentBytes(bytes, id);
    if (d.kind === 'binary') return { skip: d.warning };
    return d.warning === undefined ? { text: d.text } : { text: d.text, warning: d.warning };
  },
};

const htmlTextReader: Reader = {
  read: async (bytes, id) => {
    const d = decodeDocumentBytes(bytes, id);
    if (d.kind === 'binary') return { skip: d.warning };
    const text = decodeEntities(await htmlReader.parseContent(d.text, htmlReader.getOptions()), { level: 'html5' });
    return d.warning === undefined ? { text } : { text, warning: d.warning };
  },
};

/**
 * PDF: what LlamaIndex's `PDFReader` does (a copy of the bytes as a plain Uint8Array, unpdf's `extractText`, one text
 * per page), with pdf.js's `verbosity: 0` (errors only) so that pdf.js prints nothing (see the module comment).
 */
const pdfReader: Reader = {
  read: async (bytes) => {
    const { getDocumentProxy, extractText } = await import('unpdf');
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const { text } = await extractText(pdf);
    return { text: text.join('\n\n') };
  },
};
const docxReader = llamaReader(new DocxReader());

function readerFor(ext: string): Reader | undefined {
  switch (ext) {
    case '.md':
    case '.markdown':
    case '.txt':
      return textReader;
    case '.html':
    case '.htm':
      return htmlTextReader;
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
  /** Relative paths (sorted) of files with a read extension skipped because they hold binary content (NUL bytes). */
  binary: string[];
  /** Relative paths (sorted) of text files that were not valid UTF-8 and were read as Windows-1252. */
  recoded: string[];
  /** One warning per binary or re-coded file, naming it (`docs/ls.md: skipped, binary content ...`), in id order. */
  warnings: string[];
  /** Relative paths (sorted) of symbolic links to folders: not followed (a link can make a cycle). */
  folderLinks: string[];
  /** Broken symbolic links (sorted by path): the link's relative path and its target as written in the link. */
  brokenLinks: { path: string; target: string }[];
}

/**
 * Reads every visible file under `dir` (recursively) whose extension is in {@link READ_EXTENSIONS}.
 * Doc id = path relative to `dir` with forward slashes (`faq/payments.md`). Names starting with `.` (files and
 * folders) are ignored entirely; symbolic links to files are read; symbolic links to folders are not followed and
 * broken links are skipped, each listed apart (`folderLinks`, `brokenLinks`) so the loader can warn about them as links
 * rather than as files with an extension it does not read (issue 24 §5).
 *
 * Text files are decoded by text.ts (binary files skipped, non-UTF-8 read as Windows-1252, each with a warning).
 * Files are read, decoded and converted one at a time per worker ({@link CONCURRENCY} workers): the folder's bytes
 * are never all in memory at once; only the resulting Doc texts are kept.
 *
 * @throws HarnessError `DATASET_NOT_FOUND` when `dir` does not exist or is not a folder (names the resolved path);
 *   `DATASET_EMPTY` when no file has a read extension, or every such file is binary (lists the extensions);
 *   {@link DOCUMENT_UNREADABLE} when a reader fails on a file (names the file, the reader's message is in `cause`).
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
  const links: Links = { folder: [], broken: [] };
  await walk(root, '', files, skipped, links);
  const byPath = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  links.folder.sort(byPath);
  links.broken.sort((a, b) => byPath(a.path, b.path));
  if (files.length === 0) {
    throw new HarnessError(
      'DATASET_EMPTY',
      `no readable documents in ${root}` +
        (skipped.length > 0 ? ` (${skipped.length} file(s) with other extensions skipped)` : '') +
        (links.folder.length > 0 ? ` (${links.folder.length} link(s) to a folder not followed: ${links.folder.slice(0, 5).join(', ')})` : '') +
        (links.broken.length > 0 ? ` (${links.broken.length} broken link(s): ${links.broken.slice(0, 5).map((l) => l.path).join(', ')})` : ''),
      { location: { file: root }, remedy: `add files with one of the extensions ${READ_EXTENSIONS.join(', ')}` },
    );
  }
  const limit = pLimit(CONCURRENCY);
  const read = await Promise.all(files.map((id) => limit(() => readOne(root, id))));
  const byId = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  read.sort(byId);
  const docs: Doc[] = [];
  const binary: string[] = [];
  const recoded: string[] = [];
  const warnings: string[] = [];
  for (const r of read) {
    if ('skip' in r.result) {
      binary.push(r.id);
      warnings.push(r.result.skip);
      continue;
    }
    if (r.result.warning !== undefined) {
      recoded.push(r.id);
      warnings.push(r.result.warning);
    }
    docs.push({ id: r.id, text: r.result.text });
  }
  skipped.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (docs.length === 0) {
    throw new HarnessError('DATASET_EMPTY', `no readable documents in ${root}: all ${binary.length} file(s) with a read extension hold binary content`, {
      location: { file: root },
      remedy: `add text documents (${READ_EXTENSIONS.join(', ')}); a file with NUL bytes is not text, whatever its extension`,
    });
  }
  const empty = docs.filter((d) => d.text.trim().length === 0).map((d) => d.id);
  return { docs, skipped, empty, binary, recoded, warnings, folderLinks: links.folder, brokenLinks: links.broken };
}

/**
 * Reads a folder of documents; see {@link scanDocumentFolder} for the rules and errors.
 * @returns Docs sorted by id (UTF-16 code-unit order); `text` is exactly what evidence ranges refer to.
 */
export async function loadDocumentFolder(dir: string): Promise<Doc[]> {
  return (await scanDocumentFolder(dir)).docs;
}

/** Symbolic links {@link walk} did not read: to folders, and broken ones (with their target). */
interface Links {
  folder: string[];
  broken: { path: string; target: string }[];
}

async function walk(abs: string, rel: string, files: string[], skipped: string[], links: Links): Promise<void> {
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
      if (target === undefined) {
        links.broken.push({ path: childRel, target: await readlink(childAbs).catch(() => '?') });
        continue;
      }
      if (target.isDirectory()) {
        links.folder.push(childRel);
        continue;
      }
      if (!isFile) {
        skipped.push(childRel);
        continue;
      }
    }
    if (isDir) await walk(childAbs, childRel, files, skipped, links);
    else if (isFile) {
      if (readerFor(path.extname(e.name).toLowerCase()) !== undefined) files.push(childRel);
      else skipped.push(childRel);
    }
  }
}

async function readOne(root: string, id: string): Promise<{ id: string; result: ReadResult }> {
  const file = path.join(root, ...id.split('/'));
  const reader = readerFor(path.extname(id).toLowerCase());
  if (reader === undefined) throw new Error(`no reader for ${id}`); // walk() only lists read extensions
  try {
    const bytes = new Uint8Array(await readFile(file));
    return { id, result: await reader.read(bytes, file) };
  } catch (cause) {
    throw new HarnessError(
      DOCUMENT_UNREADABLE,
      `cannot read document ${id}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { location: { file }, remedy: 'repair or remove the file (or move it out of the docs folder)', cause },
    );
  }
}
