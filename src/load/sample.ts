/**
 * Smaller corpora that keep every label: the config's seeded sample (`dataset.sample`) and the benchmark's subset.
 *
 * Both keep every judged document and add other documents ("distractors") up to a size; they differ in what counts
 * as judged and how the others are picked:
 * - {@link sampleDataset} (`dataset.sample: { documents: N, seed }`): judged = named by ANY label of any question
 *   (a `relevant` entry of any grade, 0 included; an evidence span's document; a chunk label's document). Grade-0
 *   documents are kept because they are the hard negatives (assessors judged them because systems retrieved them);
 *   dropping them would make the sample easier still. Others are drawn uniformly without replacement with a seeded
 *   partial Fisher–Yates shuffle over the unjudged documents in id order (mulberry32, src/score/stats.ts
 *   `seededRandom`), so the same dataset and seed give the same sample on every machine. All questions are kept.
 * - {@link subsetDataset} (the bench, docs/bench.md "The subset rule"): judged = grade ≥ 1 for a kept question;
 *   others = the first N unjudged documents in id order; questions may be cut to the first M.
 * Metrics on such a sample are optimistic: a ranking has fewer distractors to beat. {@link sampleDataset} says so,
 * with the figures, in a warning that reaches the report.
 */
import { seededRandom } from '../score/stats.js';
import type { Dataset, DatasetSample, Doc, Question } from '../types.js';
import { fingerprintBoth } from './fingerprint.js';

/** `dataset.sample` as written in the config. */
export interface SampleSpec {
  /** Documents to keep in total, an integer ≥ 1 (every judged document is kept even when they are more). */
  documents: number;
  /** Seed of the draw of the other documents (any integer; default 42 in the config). */
  seed: number;
}

/** What a sample kept, as recorded in the manifest's `dataset.sample` (the type lives in types.ts, on Dataset). */
export type SampleRecord = DatasetSample;

/**
 * Ids of the documents of `docs` that a label of `questions` names: `relevant` keys with grade ≥ `minGrade`
 * (default 0, i.e. every judged document), evidence span documents (their grade ≥ 1) and the documents of chunk
 * labels (`<docId>#<ordinal>`, the part before the last `#`) with grade ≥ `minGrade`. Ids not in `docs` (dangling
 * labels kept under `labels: keep`) are left out.
 */
export function judgedDocumentIds(docs: readonly Doc[], questions: readonly Question[], minGrade = 0): Set<string> {
  const named = new Set<string>();
  for (const q of questions) {
    for (const [doc, grade] of Object.entries(q.relevant)) if (grade >= minGrade) named.add(doc);
    for (const s of q.evidence) if (s.grade >= minGrade) named.add(s.doc);
    if (q.chunkLabels !== undefined) {
      for (const [chunk, grade] of Object.entries(q.chunkLabels)) {
        const hash = chunk.lastIndexOf('#');
        if (hash > 0 && grade >= minGrade) named.add(chunk.slice(0, hash));
      }
    }
  }
  const out = new Set<string>();
  for (const d of docs) if (named.has(d.id)) out.add(d.id);
  return out;
}

/**
 * The seeded sample of `dataset.sample` (rules in this module's header): every judged document plus
 * `documents − judged` others drawn with `seed`, all questions. Pure: `dataset` is not changed. Its fingerprints are
 * neither read nor needed (loadDataset samples before fingerprinting the full corpus).
 * @returns the sampled dataset (docs in id order, `fingerprint` and `corpusFingerprint` recomputed over the sample in
 *   one pass, src/load/fingerprint.ts `fingerprintBoth`; warnings extended) and the
 *   record for the manifest. When `documents ≥` the corpus size the documents are all kept, the fingerprint is the
 *   full corpus's, and a warning says the sample is the whole corpus.
 * Warnings added: the optimism sentence `metrics are on a sample of K of M documents (every judged document, J,
 * plus R random others, seed S): with X% fewer distractors than the full corpus, they are optimistic`, where
 * X = 100 · (1 − R / (M − J)) rounded to 0.1; and, when `documents < J`, that all judged documents were kept anyway.
 * @throws RangeError when `documents` is not an integer ≥ 1 or `seed` is not an integer (the config schema refuses
 *   both first, so this is a caller's bug).
 */
export function sampleDataset(dataset: Omit<Dataset, 'fingerprint' | 'corpusFingerprint'>, spec: SampleSpec): { dataset: Dataset; sample: SampleRecord } {
  if (!Number.isInteger(spec.documents) || spec.documents < 1) throw new RangeError(`sample documents must be an integer >= 1, got ${spec.documents}`);
  if (!Number.isInteger(spec.seed)) throw new RangeError(`sample seed must be an integer, got ${spec.seed}`);
  const total = dataset.docs.length;
  const judged = judgedDocumentIds(dataset.docs, dataset.questions, 0);
  const others = dataset.docs.filter((d) => !judged.has(d.id));
  const draw = Math.min(Math.max(spec.documents - judged.size, 0), others.length);
  const chosen = new Set<string>(judged);
  for (const d of seededDraw(others, draw, spec.seed)) chosen.add(d.id);
  const docs = dataset.docs.filter((d) => chosen.has(d.id));
  const sample: SampleRecord = { documents: spec.documents, seed: spec.seed, judged: judged.size, kept: docs.length, total };
  const warnings = [...dataset.warnings];
  if (spec.documents < judged.size) {
    warnings.push(
      `dataset.sample.documents (${spec.documents}) is smaller than the ${judged.size} judged documents; all ${judged.size} are kept (a sample never drops a labelled document), no others`,
    );
  }
  if (docs.length === total) {
    warnings.push(`dataset.sample.documents (${spec.documents}) covers the whole corpus (${total} documents): metrics are on the full corpus`);
  } else {
    const fewer = others.length === 0 ? 0 : 100 * (1 - draw / others.length);
    warnings.push(
      `metrics are on a sample of ${docs.length} of ${total} documents (every judged document, ${judged.size}, plus ${draw} random others, seed ${spec.seed}): ` +
        `with ${fewer.toFixed(1)}% fewer distractors than the full corpus, they are optimistic`,
    );
  }
  return {
    dataset: { ...dataset, docs, warnings, ...fingerprintBoth(docs, dataset.questions), sample },
    sample,
  };
}

/**
 * `count` items of `items` drawn uniformly without replacement: a partial Fisher–Yates shuffle (Knuth, TAOCP vol. 2,
 * Algorithm P) of a copy, index `i + floor(u · (n − i))` for i = 0..count−1 with u from `seededRandom(seed)`.
 * Returns the drawn items in draw order; `items` is not changed.
 */
function seededDraw<T>(items: readonly T[], count: number, seed: number): T[] {
  const a = [...items];
  const rand = seededRandom(seed);
  const n = a.length;
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(rand() * (n - i));
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a.slice(0, count);
}

/** The bench's subset, as written into bench.json (`null` there when the whole corpus is used). */
export interface SubsetInfo {
  /** The rule in words. */
  rule: string;
  /** Documents judged relevant (grade ≥ 1) for at least one kept question. */
  judgedDocs: number;
  /** Other documents kept (the first `others` of the rest in id order). */
  otherDocs: number;
  /** Documents in the subset (judgedDocs + otherDocs). */
  docs: number;
  /** Documents in the full corpus. */
  corpusDocs: number;
  /** Questions kept. */
  questions: number;
  /** Questions in the full split. */
  corpusQuestions: number;
}

/**
 * The bench's deterministic subset (moved here from bench/setup.ts, unchanged): keeps the first `maxQuestions`
 * questions (file order; all when null), every document judged relevant (grade ≥ 1) for a kept question, plus the
 * first `others` remaining documents in the dataset's document order (ids in code-unit order, as `loadDataset` sorts
 * them). `others: null` keeps every document. Returns the dataset unchanged (same object) and `subset: null` when
 * nothing is left out. The result's `fingerprint` and `corpusFingerprint` are recomputed; the input is not changed. `others` and
 * `maxQuestions` are integers ≥ 0 (≥ 1 for questions); anything else is a plain `Error` (a bug in the bench's
 * argument parsing).
 */
export function subsetDataset(
  dataset: Dataset,
  others: number | null,
  maxQuestions: number | null = null,
): { dataset: Dataset; subset: SubsetInfo | null } {
  if (others !== null && (!Number.isInteger(others) || others < 0)) throw new Error(`others must be an integer >= 0, got ${others}`);
  if (maxQuestions !== null && (!Number.isInteger(maxQuestions) || maxQuestions < 1))
    throw new Error(`maxQuestions must be an integer >= 1, got ${maxQuestions}`);
  const questions = maxQuestions === null ? dataset.questions : dataset.questions.slice(0, maxQuestions);
  if (others === null && questions.length === dataset.questions.length) return { dataset, subset: null };
  const judged = new Set<string>();
  for (const q of questions) for (const [doc, grade] of Object.entries(q.relevant)) if (grade >= 1) judged.add(doc);
  const docs = [];
  let taken = 0;
  for (const d of dataset.docs) {
    if (judged.has(d.id)) docs.push(d);
    else if (others === null || taken < others) {
      docs.push(d);
      taken++;
    }
  }
  const judgedDocs = dataset.docs.filter((d) => judged.has(d.id)).length;
  const rule =
    `first ${questions.length} of ${dataset.questions.length} questions (file order); ` +
    (others === null
      ? 'all documents'
      : `all ${judgedDocs} documents judged relevant for them, plus the first ${taken} other documents in id order (code-unit order)`);
  return {
    dataset: { ...dataset, docs, questions, ...fingerprintBoth(docs, questions) },
    subset: {
      rule,
      judgedDocs,
      otherDocs: taken,
      docs: docs.length,
      corpusDocs: dataset.docs.length,
      questions: questions.length,
      corpusQuestions: dataset.questions.length,
    },
  };
}
