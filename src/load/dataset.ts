/**
 * Loading a dataset folder in either layout and fingerprinting what was loaded.
 *
 * Layouts (detected from the folder's contents):
 * - `beir`: `corpus.jsonl` present → corpus.jsonl + queries.jsonl + qrels/<split>.tsv (see beir.ts);
 * - `folder`: `docs/` present → documents read from docs/ (see documents.ts) + questions.jsonl (see questions.ts).
 */
import { isUtf8 } from 'node:buffer';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import type { Dataset, Doc, Question } from '../types.js';
import { loadBeir, type TextStorePlacement } from './beir.js';
import { READ_EXTENSIONS, scanDocumentFolder, type DocumentFolderScan } from './documents.js';
import { invalidUtf8Warning, loadQuestionsFile, type LabelPolicy, type Strictness } from './questions.js';
import { sampleDataset, type SampleSpec } from './sample.js';
import { appendAll } from '../bounded.js';
import { fingerprintBothAsync, type DatasetFingerprints } from './fingerprint.js';
import { textStoreOf } from './text-store.js';

export { corpusFingerprintOf, fingerprintBoth, fingerprintBothAsync, fingerprintCorpus, fingerprintDataset } from './fingerprint.js';

/** What the config says about a dataset. */
export interface DatasetSpec {
  /** Dataset folder; a relative path resolves against `opts.baseDir` (the config file's folder). */
  path: string;
  /** BEIR split, default `test`; ignored (with a warning) for the folder layout. */
  split?: string;
  /** Display name; default the folder's base name. */
  name?: string;
  /**
   * A label naming a document not in the corpus (field case V02): `strict` (default) = LABEL_INVALID listing every
   * dangling label; `keep` = keep it (unretrievable, lowers recall, trec_eval style); `drop` = remove it.
   * `keep` and `drop` add one warning per label.
   */
  labels?: LabelPolicy;
  /**
   * questions.jsonl lines with an unknown key: `strict` (default) = QUESTIONS_INVALID naming file, line, key and the
   * nearest known key; `warn` = the key is ignored with one warning per key (datasets written by other tools).
   */
  strictness?: Strictness;
  /**
   * Keep every judged document (named by any label, grade 0 included) plus seeded random others up to `documents`
   * in total (src/load/sample.ts {@link sampleDataset}). The fingerprint is then the sample's, `Dataset.sample`
   * records `{ documents, seed, judged, kept, total }`, and a warning says the metrics are optimistic and by how
   * many fewer distractors. Default: the whole corpus.
   */
  sample?: SampleSpec;
}

/** Options of {@link loadDataset}. */
export interface LoadDatasetOptions {
  /** Folder that relative `spec.path` values resolve against; default the process's working directory. */
  baseDir?: string;
  /**
   * Where the documents' texts go when the corpus is large (BEIR layout; see `LoadBeirOptions.textStore`): a corpus
   * file above `residentBytes` is loaded into a text store in `dir` and `docs` are `StoredDoc`s
   * (src/load/text-store.ts; remove it with `textStoreOf(dataset.docs)?.remove()`). The folder layout stays in memory.
   * Default: in memory.
   */
  textStore?: TextStorePlacement;
}

const POLICIES: readonly LabelPolicy[] = ['strict', 'keep', 'drop'];

/**
 * Loads the dataset `spec` names.
 * @returns a {@link Dataset}: docs sorted by id, questions in file order, warnings (skipped files, documents with
 *   no text, collapsed duplicates, repeated or dangling labels under keep/drop, ...), `fingerprint`
 *   (`fingerprintDataset`) and `corpusFingerprint` (`fingerprintCorpus`), both computed without a second read of the
 *   texts (src/load/fingerprint.ts: hashed while a BEIR corpus in id order streams, else `fingerprintBothAsync`'s one
 *   pass, which yields to the event loop every 32 Mi code units); with `sample`, both over the sample's documents only.
 * @throws HarnessError `DATASET_NOT_FOUND` (the folder, docs/, questions.jsonl or a BEIR file is missing; names
 *   the resolved path), `CONFIG_INVALID` (an unknown `labels` value; a `sample` whose `documents` is not an integer
 *   ≥ 1 or whose `seed` is not an integer), and everything the layout loaders throw
 *   (`DATASET_EMPTY`, `QUESTIONS_INVALID`, `LABEL_INVALID`, `QRELS_INVALID`).
 */
export async function loadDataset(spec: DatasetSpec, opts: LoadDatasetOptions = {}): Promise<Dataset> {
  if (spec.sample !== undefined) checkSample(spec.sample);
  const { dataset: full, fingerprints } = await loadFull(spec, opts);
  try {
    // A sample is fingerprinted over its own documents: the full corpus's values (a pass over every text when they
    // were not hashed while streaming) would be thrown away.
    if (spec.sample !== undefined) return sampleDataset(full, spec.sample).dataset;
    // Hashed while the corpus streamed when it is in id order; else one pass over the sorted documents (which yields
    // to the event loop, so the load heartbeat is not silent meanwhile).
    return { ...full, ...(fingerprints ?? (await fingerprintBothAsync(full.docs, full.questions))) };
  } catch (e) {
    textStoreOf(full.docs)?.remove();
    throw e;
  }
}

function checkSample(s: SampleSpec): void {
  const bad: [string, string][] = [];
  if (!Number.isInteger(s.documents) || s.documents < 1) bad.push(['documents', 'an integer ≥ 1']);
  if (!Number.isInteger(s.seed)) bad.push(['seed', 'an integer']);
  if (bad.length > 0) {
    const [key, want] = bad[0];
    throw new HarnessError('CONFIG_INVALID', `dataset.sample.${key} must be ${want}, got ${JSON.stringify((s as unknown as Record<string, unknown>)[key])}`, {
      location: { path: `dataset.sample.${key}` },
      remedy: 'write dataset.sample: { documents: 1000, seed: 42 } (documents kept in total, seed of the draw)',
    });
  }
}

/** A loaded dataset before its fingerprints, and the fingerprints when they were computed while it streamed. */
interface Loaded {
  dataset: Omit<Dataset, 'fingerprint' | 'corpusFingerprint'>;
  fingerprints: DatasetFingerprints | undefined;
}

async function loadFull(spec: DatasetSpec, opts: LoadDatasetOptions): Promise<Loaded> {
  const labels = spec.labels ?? 'strict';
  if (!POLICIES.includes(labels)) {
    throw new HarnessError('CONFIG_INVALID', `dataset.labels must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(labels)}`, {
      location: { path: 'dataset.labels' },
      remedy: 'use labels: strict (default), keep or drop',
    });
  }
  const root = path.resolve(opts.baseDir ?? process.cwd(), spec.path);
  const rootStat = await stat(root).catch(() => undefined);
  if (rootStat === undefined || !rootStat.isDirectory()) {
    throw new HarnessError(
      'DATASET_NOT_FOUND',
      rootStat === undefined ? `dataset folder ${root} does not exist` : `dataset path ${root} is not a folder`,
      {
        location: { file: root },
        remedy: `check dataset.path (${JSON.stringify(spec.path)}); relative paths resolve against ${opts.baseDir ?? 'the working directory'}`,
      },
    );
  }
  const name = spec.name ?? path.basename(root);

  if (await isFile(path.join(root, 'corpus.jsonl'))) {
    const split = spec.split ?? 'test';
    const { docs, questions, warnings, fingerprints } = await loadBeir(root, split, { labels, ...(opts.textStore === undefined ? {} : { textStore: opts.textStore }) });
    return { dataset: { name, root, layout: 'beir', split, docs, questions, warnings }, fingerprints };
  }

  const docsDir = path.join(root, 'docs');
  if (!(await isDirectory(docsDir))) {
    throw new HarnessError('DATASET_NOT_FOUND', `${root} has neither a docs/ folder nor a corpus.jsonl`, {
      location: { file: root },
      remedy: 'use the folder layout (docs/ + questions.jsonl) or the BEIR layout (corpus.jsonl + queries.jsonl + qrels/<split>.tsv)',
    });
  }
  const questionsFile = path.join(root, 'questions.jsonl');
  if (!(await isFile(questionsFile))) {
    throw new HarnessError('DATASET_NOT_FOUND', `questions file ${questionsFile} does not exist`, {
      location: { file: questionsFile },
      remedy: 'put the labelled questions next to docs/ in questions.jsonl, one JSON object a line',
    });
  }
  const warnings: string[] = [];
  if (spec.split !== undefined) warnings.push(`dataset.split (${spec.split}) ignored: ${root} uses the folder layout, not BEIR`);
  const scan = await scanDocumentFolder(docsDir);
  if (scan.skipped.length > 0) {
    const shown = scan.skipped.slice(0, 10).join(', ') + (scan.skipped.length > 10 ? `, ... (${scan.skipped.length - 10} more)` : '');
    warnings.push(`${docsDir}: ${scan.skipped.length} file(s) skipped, extension not read (${shown}); read: ${READ_EXTENSIONS.join(' ')}`);
  }
  appendAll(warnings, linkWarnings(docsDir, scan));
  appendAll(warnings, scan.warnings);
  for (const id of scan.empty) warnings.push(`${docsDir}: document ${id} has no text (kept; it yields no chunks)`);
  const docMap = new Map(scan.docs.map((d) => [d.id, d] as const));
  // Streamed line by line with a bounded line length (issue 24): a 1 GB file is never one string.
  const parsed = await loadQuestionsFile(questionsFile, docMap, { labels, strictness: spec.strictness ?? 'strict' });
  appendAll(warnings, parsed.warnings);
  return { dataset: { name, root, layout: 'folder', docs: scan.docs, questions: parsed.questions, warnings }, fingerprints: undefined };
}

/**
 * The warnings for symbolic links in the document folder that were not read (issue 24 §5: they were reported as files
 * whose "extension is not read"): one for links to folders (never followed: a link can make a cycle), one for broken
 * links with their targets; each names the folder and up to 10 links.
 */
export function linkWarnings(docsDir: string, scan: Pick<DocumentFolderScan, 'folderLinks' | 'brokenLinks'>): string[] {
  const list = (items: string[]): string => items.slice(0, 10).join(', ') + (items.length > 10 ? `, ... (${items.length - 10} more)` : '');
  const out: string[] = [];
  if (scan.folderLinks.length > 0)
    out.push(
      `${docsDir}: ${scan.folderLinks.length} link(s) to a folder not followed (${list(scan.folderLinks)}); ` +
        'links to folders are never followed (a link can make a cycle): move or copy the folder into docs/, or link its files',
    );
  if (scan.brokenLinks.length > 0)
    out.push(
      `${docsDir}: ${scan.brokenLinks.length} broken link(s) skipped (${list(scan.brokenLinks.map((l) => `${l.path} -> ${l.target}`))}); ` +
        'their target does not exist: fix or remove the links',
    );
  return out;
}

async function isFile(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isFile() ?? false;
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isDirectory() ?? false;
}

/**
 * One warning for a questions.jsonl held in memory as `bytes` that is not valid UTF-8 (issue 24: documents got one,
 * questions did not): names the file and up to 5 line numbers whose invalid bytes were read as U+FFFD. Empty for valid
 * UTF-8. The loader itself warns while streaming (questions.ts {@link loadQuestionsFile}) with the same text.
 */
export function invalidUtf8Warnings(file: string, bytes: Buffer): string[] {
  if (isUtf8(bytes)) return [];
  const lines: number[] = [];
  let start = 0;
  for (let line = 1; start <= bytes.length; line++) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    if (!isUtf8(bytes.subarray(start, end))) lines.push(line);
    start = end + 1;
  }
  const w = invalidUtf8Warning(file, lines);
  return w === undefined ? [] : [w];
}
