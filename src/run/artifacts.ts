/**
 * Writing a finished sweep to disk, all or nothing: every file is written into a temporary sibling folder, which then
 * replaces the results folder in one rename. A failure part-way leaves the old results (if any) untouched.
 *
 * Layout of a results folder:
 * - `matrix.csv`, `matrix.json`: one row per configuration, full precision;
 * - `per-query.jsonl`: one line per configuration and question (ranked chunks and documents, first relevant rank,
 *   metric values);
 * - `report.md`, `report.html`: the decision report;
 * - `manifest.json`: resolved config, dataset fingerprint, package and model versions, BM25 parameters, tie rule;
 * - `questions.jsonl`: the scored questions as loaded (ids, text, labels, tags);
 * - `qrels.trec` (level document) or `qrels/<chunking>.trec` (levels chunk and evidence: chunk ids, evidence grades
 *   projected onto that chunking) and `runs/<config_id>.trec`: TREC files that reproduce the matrix with trec_eval
 *   (at the evidence level every measure but recall, which counts evidence spans, and the character/token measures).
 */
import type { RenderedReports } from '../report/render.js';
import { mkdirSync, renameSync, rmSync, writeFileSync, existsSync, readFileSync, readdirSync, statSync, realpathSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { ConfigResult, ConfigSpec, Level, Question, QueryDetail, SweepResult } from '../types.js';
import { formatQrels, formatRun } from '../load/trec.js';
import { HarnessError } from '../errors.js';
import { resourceFailure } from '../store/resource.js';
import { runWarnings } from '../report/warnings.js';
import { OWNER_FILE, assertNotLockedByOther, ownerRecord, removeStaleTemporaries } from './lock.js';

/** One line of per-query.jsonl. */
export interface PerQueryLine {
  config_id: string;
  qid: string;
  /** Ranked document ids of the top k (a document appears once per retrieved chunk). */
  ranked_docs: string[];
  /** Ranked chunk ids and scores of the top k. */
  retrieved: { chunk: string; doc: string; score: number }[];
  first_relevant_rank: number | null;
  metrics: Record<string, number>;
}

/**
 * The TREC run lines of one configuration: per question, its top-k slots in rank order. The first slot of a document
 * carries the document id; a later chunk of an already-listed document carries its chunk id (`doc#3`), which no qrels
 * line names, so trec_eval scores that slot as not relevant, exactly as the sweep did. The score column is
 * `k + 1 - rank`, so trec_eval's (score descending, docno descending) order is exactly the scored order; the
 * retrievers' own scores are in per-query.jsonl.
 */
export function runRows(row: ConfigResult, level: Level = 'document'): { qid: string; docno: string; rank: number; score: number }[] {
  const out: { qid: string; docno: string; rank: number; score: number }[] = [];
  for (const q of row.perQuery) {
    const seen = new Set<string>();
    q.retrieved.forEach((r, i) => {
      // At the chunk and evidence levels the scored items are chunks: the docno is the chunk id.
      const docno = level !== 'document' ? r.chunkId : seen.has(r.docId) ? r.chunkId : r.docId;
      seen.add(r.docId);
      out.push({ qid: trecId(q.qid), docno: trecId(docno), rank: i + 1, score: row.config.k + 1 - (i + 1) });
    });
  }
  return out;
}

/**
 * A document or question id as a TREC token: TREC files are whitespace-separated, so `%` and whitespace are
 * percent-encoded (`my notes.md` → `my%20notes.md`). Applied alike to qrels.trec and the runs, so they still match.
 */
export function trecId(id: string): string {
  return /[\s%]/.test(id)
    ? id.replace(/[\s%]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
    : id;
}

/**
 * Inverse of {@link trecId}: `%XX` (or `%XXXX` for a wider space such as U+3000) that encodes whitespace or `%` is
 * decoded; any other `%` is kept. Pure.
 */
export function decodeTrecId(id: string): string {
  if (!id.includes('%')) return id;
  return id.replace(/%([0-9A-F]{4}|[0-9A-F]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    if (/[\s%]/.test(c)) return c;
    // A 4-digit match that is not whitespace may be a 2-digit code followed by two hex characters.
    const c2 = String.fromCharCode(parseInt(hex.slice(0, 2), 16));
    return hex.length === 4 && /[\s%]/.test(c2) ? c2 + hex.slice(2) : m;
  });
}

/**
 * A run read back with the ids the tool's own export percent-encoded (issue 24): a qid or docno that is not a known
 * id but whose {@link decodeTrecId} is, is replaced by the decoded id. Returns the run and how many distinct ids were
 * decoded (0: the run is returned unchanged).
 */
export function decodeRunIds<E extends { docno: string }>(
  run: Map<string, E[]>,
  qids: Pick<ReadonlySet<string>, 'has'>,
  docIds: Pick<ReadonlySet<string>, 'has'>,
): { run: Map<string, E[]>; decoded: number } {
  const decoded = new Set<string>();
  const fix = (id: string, known: Pick<ReadonlySet<string>, 'has'>) => {
    if (known.has(id) || !id.includes('%')) return id;
    const d = decodeTrecId(id);
    if (d !== id && known.has(d)) {
      decoded.add(id);
      return d;
    }
    return id;
  };
  const out = new Map<string, E[]>();
  for (const [q, entries] of run) {
    const qid = fix(q, qids);
    out.set(qid, [...(out.get(qid) ?? []), ...entries.map((e) => ({ ...e, docno: fix(e.docno, docIds) }))]);
  }
  return decoded.size === 0 ? { run, decoded: 0 } : { run: out, decoded: decoded.size };
}

/** qrels of the scored questions (questions left out of the means are left out here too). */
export function qrelsOf(questions: readonly Question[]): Map<string, Map<string, number>> {
  const qrels = new Map<string, Map<string, number>>();
  for (const q of questions) qrels.set(trecId(q.id), new Map(Object.entries(q.relevant).map(([d, g]) => [trecId(d), g])));
  return qrels;
}

/** True when `dir` holds a results folder this tool wrote (its manifest.json names retrieval-sweep). */
function isResultsFolder(dir: string): boolean {
  try {
    const m = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { tool?: unknown };
    return m.tool === 'retrieval-sweep';
  } catch {
    return false;
  }
}

function outputError(message: string, outDir: string, remedy: string, cause?: unknown): HarnessError {
  return new HarnessError('OUTPUT_INVALID', message, { location: { file: outDir }, remedy, ...(cause ? { cause } : {}) });
}

/**
 * Checks, before any work, that `outDir` can receive a results folder without destroying anything else: it must not
 * exist, or be an empty folder, or be a results folder this tool wrote earlier (which is replaced); it must not be the
 * working directory or one of its parents; and its parent must accept a new folder. First removes what killed runs left
 * beside it (`.<name>.tmp-*` folders of owners that are gone; see `removeStaleTemporaries` in lock.ts) and refuses
 * when a live process other than this one holds `<out>.lock`.
 * @throws HarnessError('OUTPUT_INVALID') naming the path and what to do.
 */
export function checkOutputDir(outDir: string): void {
  const target = path.resolve(outDir);
  assertNotLockedByOther(target);
  removeStaleTemporaries(target);
  const cwd = process.cwd();
  if (cwd === target || cwd.startsWith(target.endsWith(path.sep) ? target : target + path.sep)) {
    throw outputError(`--out ${target} is the working directory or one of its parents`, outDir, 'pass a new folder such as results/my-run');
  }
  if (existsSync(target)) {
    const st = statSync(target);
    if (!st.isDirectory()) throw outputError(`--out ${target} is a file, not a folder`, outDir, 'pass a folder path that does not exist yet');
    if (readdirSync(target).length > 0 && !isResultsFolder(target)) {
      throw outputError(
        `--out ${target} already exists and is not a retrieval-sweep results folder (no manifest.json of ours); refusing to replace it`,
        outDir,
        'pass a new or empty folder, or an earlier results folder to replace it',
      );
    }
  }
  const parent = path.dirname(target);
  const probe = path.join(parent, `.${path.basename(target)}.probe-${process.pid}-${Date.now()}`);
  try {
    mkdirSync(parent, { recursive: true });
    mkdirSync(probe);
    rmSync(probe, { recursive: true, force: true });
  } catch (e) {
    throw outputError(
      `cannot create the results folder under ${parent}: ${(e as NodeJS.ErrnoException).code ?? ''} ${(e as Error).message}`.trim(),
      outDir,
      'pass --out a folder in a writable place',
      e,
    );
  }
}

/** `p` with symbolic links resolved as far as it exists (the rest appended), so aliases of one folder compare equal. */
function realish(p: string): string {
  const abs = path.resolve(p);
  let head = abs;
  const tail: string[] = [];
  while (true) {
    try {
      return path.join(realpathSync(head), ...tail.reverse());
    } catch {
      const up = path.dirname(head);
      if (up === head) return abs;
      tail.push(path.basename(head));
      head = up;
    }
  }
}

function within(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

/**
 * Refuses a results folder inside the dataset (its root folder, and so its `docs/` folder: the next run would index
 * report.md and report.html as documents), and a dataset inside the results folder (replacing the results would
 * delete it). Symbolic links are resolved. `config.datasetPath` is the resolved, absolute dataset folder; `config.name`
 * (default `sweep`) names the folder the remedy suggests.
 * @throws HarnessError('OUTPUT_INVALID') naming both paths, with a remedy naming a folder that passes this check
 *   (`<dataset's parent>/results/<name>`, or `<dataset's parent>/<dataset>-results/<name>`).
 */
export function checkOutputOutsideDataset(config: { datasetPath: string; name?: string }, outDir: string): void {
  const out = realish(outDir);
  const root = realish(config.datasetPath);
  const docs = path.join(root, 'docs');
  const name = config.name ?? 'sweep';
  if (within(out, root)) {
    const where = within(out, docs) ? `the dataset's docs folder ${docs}` : `the dataset folder ${root}`;
    // A folder that works: beside the dataset, never inside it (results/<name> under the working directory is what
    // just failed when the command ran from inside the dataset).
    const beside = path.join(path.dirname(root), 'results', name);
    throw outputError(
      `--out ${path.resolve(outDir)} is inside ${where}: the next run would read the results as part of the dataset`,
      outDir,
      `pass --out ${beside} (beside the dataset), or run from a folder outside ${root} (the default results/${name} is relative to the working directory)`,
    );
  }
  if (within(root, out)) {
    const beside = path.join(path.dirname(root), `${path.basename(root)}-results`, name);
    throw outputError(
      `the dataset folder ${root} is inside --out ${path.resolve(outDir)}: replacing the results would delete the dataset`,
      outDir,
      `pass a folder that does not contain ${root}, such as --out ${beside}`,
    );
  }
}

/**
 * Writes every artifact of `result` into `outDir` atomically (temp folder + rename); on failure the temporary folder is
 * removed and the previous results stay as they were.
 * @throws HarnessError('RESOURCE_UNAVAILABLE') naming the path and `--out` for a full disk, a permission, a read-only
 *   file system (src/store/resource.ts); HarnessError('OUTPUT_INVALID') from {@link checkOutputDir}.
 * @param rendered the report files from `renderReports` (`matrix.csv`, `matrix.json`, `report.md`, `report.html`).
 * @returns the absolute paths written.
 */
export function writeArtifacts(
  outDir: string,
  result: SweepResult,
  rendered: Readonly<Record<string, string>> | RenderedReports,
): string[] {
  checkOutputDir(outDir);
  const target = path.resolve(outDir);
  const parent = path.dirname(target);
  const tmp = path.join(parent, `.${path.basename(target)}.tmp-${process.pid}-${Date.now()}`);
  const written: string[] = [];
  const put = (name: string, text: string) => {
    const file = path.join(tmp, name);
    mkdirSync(path.dirname(file), { recursive: true });
    try {
      writeFileSync(file, text);
    } catch (e) {
      // A write's ENOSPC carries no path (it is an fd's): name the file being written.
      if (e !== null && typeof e === 'object' && (e as { path?: unknown }).path === undefined) (e as { path?: string }).path = file;
      throw e;
    }
    written.push(path.join(target, name));
  };
  try {
    mkdirSync(tmp);
    // Who is filling this folder: the next run removes it once this process is gone (lock.ts).
    writeFileSync(path.join(tmp, OWNER_FILE), JSON.stringify(ownerRecord()) + '\n');
    for (const [name, text] of Object.entries(rendered)) if (name !== 'terminal') put(name, text);
    put('manifest.json', JSON.stringify(result.manifest, null, 2) + '\n');
    put(
      'questions.jsonl',
      result.questions.map((q) => JSON.stringify({ id: q.id, question: q.text, relevant: q.relevant, tags: q.tags, evidence: q.evidence })).join('\n') + '\n',
    );
    const lines: string[] = [];
    for (const row of result.configs) {
      for (const q of row.perQuery) lines.push(JSON.stringify(perQueryLine(row.config, q)));
    }
    put('per-query.jsonl', lines.join('\n') + (lines.length ? '\n' : ''));
    put(
      'configs.json',
      JSON.stringify(
        {
          name: result.name,
          createdAt: result.createdAt,
          primaryMetric: result.primaryMetric,
          level: result.level,
          excluded: result.excluded,
          warnings: result.warnings ?? [],
          configs: result.configs.map((c) => ({ ...c, perQuery: undefined })),
        },
        null,
        1,
      ) + '\n',
    );
    if (result.level === 'document') put('qrels.trec', formatQrels(qrelsOf(result.questions)));
    for (const [key, perQuestion] of Object.entries(result.chunkQrels ?? {})) {
      const qrels = new Map<string, Map<string, number>>();
      for (const [qid, grades] of Object.entries(perQuestion))
        qrels.set(trecId(qid), new Map(Object.entries(grades).map(([c, g]) => [trecId(c), g])));
      put(path.join('qrels', `${key}.trec`), formatQrels(qrels));
    }
    for (const row of result.configs) {
      if (row.status !== 'ok') continue;
      put(path.join('runs', `${row.config.id}.trec`), formatRun(runRows(row, result.level), row.config.id));
    }
    unlinkSync(path.join(tmp, OWNER_FILE));
    const old = `${target}.old-${process.pid}-${Date.now()}`;
    if (existsSync(target)) renameSync(target, old);
    renameSync(tmp, target);
    if (existsSync(old)) rmSync(old, { recursive: true, force: true });
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    // A full disk, a permission...: the user's, naming --out (a write's ENOSPC carries no path of its own).
    throw resourceFailure(e, [{ dir: parent, key: '--out' }]) ?? e;
  }
  return written;
}

function perQueryLine(config: ConfigSpec, q: QueryDetail): PerQueryLine {
  return {
    config_id: config.id,
    qid: q.qid,
    ranked_docs: q.retrieved.map((r) => r.docId),
    retrieved: q.retrieved.map((r) => ({ chunk: r.chunkId, doc: r.docId, score: r.score })),
    first_relevant_rank: q.firstRelevantRank,
    metrics: q.metrics,
  };
}

/**
 * Reads a finished results folder back into a {@link SweepResult} (for `compare`). `warnings` comes from configs.json;
 * a folder written before that field existed gets `manifest.dataset.warnings` (or none).
 * @throws HarnessError('RESULTS_INVALID') when the folder lacks configs.json, per-query.jsonl, questions.jsonl or
 *   manifest.json, naming the missing file.
 */
export function loadSweepResult(dir: string): SweepResult {
  const need = ['configs.json', 'per-query.jsonl', 'questions.jsonl', 'manifest.json'];
  for (const f of need) {
    if (!existsSync(path.join(dir, f)))
      throw new HarnessError('RESULTS_INVALID', `${path.join(dir, f)} is missing: ${dir} is not a finished sweep`, {
        location: { file: dir },
        remedy: 'pass the folder a `retrieval-sweep run` wrote (results/<name> or its --out)',
      });
  }
  const damaged = (file: string, line: number | undefined, why: string) =>
    new HarnessError('RESULTS_INVALID', `${file} is damaged: ${why}`, {
      location: line === undefined ? { file } : { file, line },
      remedy: 'run the sweep again to rewrite the results folder',
    });
  const parse = <T>(text: string, file: string, line?: number): T => {
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw damaged(file, line, (e as Error).message);
    }
  };
  const readJson = <T>(name: string): T => parse<T>(readFileSync(path.join(dir, name), 'utf8'), path.join(dir, name));
  const readLines = <T>(name: string): { value: T; line: number }[] => {
    const file = path.join(dir, name);
    const out: { value: T; line: number }[] = [];
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((l, i) => {
        if (l.trim() !== '') out.push({ value: parse<T>(l, file, i + 1), line: i + 1 });
      });
    return out;
  };
  const head = readJson<Omit<SweepResult, 'questions' | 'manifest'> & { configs: ConfigResult[] }>('configs.json');
  if (!head || !Array.isArray(head.configs) || typeof head.primaryMetric !== 'string')
    throw damaged(path.join(dir, 'configs.json'), undefined, 'it lacks "configs" or "primaryMetric"');
  const manifest = readJson<Record<string, unknown>>('manifest.json');
  const questions: Question[] = readLines<{ id: string; question: string; relevant: Record<string, number>; tags: string[]; evidence: Question['evidence'] }>(
    'questions.jsonl',
  ).map(({ value: o, line }) => {
    if (typeof o?.id !== 'string' || typeof o.relevant !== 'object') throw damaged(path.join(dir, 'questions.jsonl'), line, 'a line lacks "id" or "relevant"');
    return { id: o.id, text: o.question, relevant: o.relevant, tags: o.tags ?? [], evidence: o.evidence ?? [], line };
  });
  const byConfig = new Map<string, QueryDetail[]>();
  for (const { value: o, line } of readLines<PerQueryLine>('per-query.jsonl')) {
    if (typeof o?.config_id !== 'string' || !Array.isArray(o.retrieved))
      throw damaged(path.join(dir, 'per-query.jsonl'), line, 'a line lacks "config_id" or "retrieved"');
    let list = byConfig.get(o.config_id);
    if (!list) byConfig.set(o.config_id, (list = []));
    list.push({
      qid: o.qid,
      retrieved: o.retrieved.map((r) => ({ chunkId: r.chunk, docId: r.doc, score: r.score })),
      firstRelevantRank: o.first_relevant_rank,
      metrics: o.metrics,
    });
  }
  return {
    name: head.name,
    createdAt: head.createdAt,
    primaryMetric: head.primaryMetric,
    level: head.level,
    excluded: head.excluded,
    // Folders written before configs.json had "warnings": keep the dataset's warnings from the manifest (else none).
    warnings: Array.isArray(head.warnings)
      ? head.warnings.filter((w): w is string => typeof w === 'string')
      : runWarnings({ manifest } as SweepResult),
    questions,
    manifest,
    configs: head.configs.map((c) => ({ ...c, perQuery: byConfig.get(c.config.id) ?? [] })),
  };
}
