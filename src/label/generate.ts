/**
 * Synthetic questions with evidence: `retrieval-sweep generate DATASET --model openai-chat:<name> --out FILE`.
 *
 * 1. Passages: the dataset's documents cut into chunks of `chunkSize` tokens (src/chunk/chunker.ts, no overlap; null
 *    = whole documents). Documents are visited in a seeded random order (`seed`, src/score/stats.ts seededRandom) and
 *    from each one passage is drawn with the same random source, until enough questions are asked for: each passage
 *    asks for `min(perDocument, questions still wanted)` questions, so N questions come from ⌈N / perDocument⌉
 *    documents (fewer documents in the corpus: fewer questions, said in the summary).
 * 2. Styles: with several styles, passage i uses style i mod the number of styles, and its questions carry the style
 *    name as a tag (`keyword`, `paraphrase`); with one, no style tag.
 * 3. Each answer is parsed strictly ({@link parseQuestionsAnswer}: the first JSON object, `{"questions": [...]}`); an
 *    unparsable answer is asked once more with the same request, then counted as unparsable (nothing guessed).
 *    Parsed answers are cached (src/llm/cache.ts), so a rerun sends no request.
 * 4. Filters, each counted: `judgedBelow2` / `judgeUnparsable` with `checkWithJudge` (the judge grades the question
 *    against its passage; below 2, or no parsable grade after one more ask, drops it), `duplicate` (same text after {@link normaliseQuestion} as a question already in the file,
 *    human or generated, or earlier in this run), `high-overlap` (the longest run of the question's words found
 *    contiguously in the passage covers at least `overlapThreshold` of its words and at least 4 words: tagged
 *    `high-overlap`, kept unless `dropOverlap`), and what the model gave beyond the count asked for (`extra`).
 * 5. Output: one questions.jsonl line per kept question, `{id, question, tags: ["synthetic", style?, "high-overlap"?],
 *    evidence: [{doc, start, end}]}` (the passage's character range: the label survives every chunking), checked
 *    against the question schema. The id is `syn-` + the first 16 hex digits of sha256(doc, start, end, question).
 *    An existing file is kept byte for byte and the new lines appended after it, written atomically (a temporary
 *    sibling, then one rename): nothing half-written, no human line renumbered or touched.
 */
import { writeFileAtomic } from '../store/temp.js';
import { existsSync, readFileSync } from 'node:fs';
import { chunkDocuments } from '../chunk/chunker.js';
import { sha256Text } from '../embed/hash.js';
import { HarnessError } from '../errors.js';
import { answerKey, type ChatCache } from '../llm/cache.js';
import type { ChatClient, ChatStats } from '../llm/chat.js';
import { fillPrompt, GENERATION_STYLES, parseQuestionsAnswer, type PromptTemplate } from '../llm/prompts.js';
import { questionLineSchema } from '../load/question-schema.js';
import { seededRandom } from '../score/stats.js';
import { gradePair } from './judge.js';
import type { Chunk, Dataset } from '../types.js';

/** What {@link runGenerate} needs. */
export interface GenerateInput {
  dataset: Dataset;
  /** questions.jsonl to append to (created when missing). */
  outFile: string;
  client: ChatClient;
  cache: ChatCache;
  prompt: PromptTemplate;
  /** Questions wanted, ≥ 1. */
  questions: number;
  /** Questions asked per passage (one passage per document), ≥ 1. Default 1. */
  perDocument?: number;
  /** Seed of the document order and passage draw. Default 42. */
  seed?: number;
  /** Passage size in tokens; null = whole documents. Default 256. */
  chunkSize?: number | null;
  /** Prompt styles ({@link GENERATION_STYLES} keys). Default `['plain']`. */
  styles?: string[];
  /** Share of a question's words in one run copied from the passage at which it is tagged `high-overlap`. Default 0.7. */
  overlapThreshold?: number;
  /** Drop high-overlap questions instead of tagging them. Default false. */
  dropOverlap?: boolean;
  /**
   * Grade each kept question against its passage with this judge prompt (src/label/judge.ts {@link gradePair}, same
   * model and cache) and drop it when the grade is below 2, or when the grade cannot be parsed twice (nothing is
   * guessed). Default: no check.
   */
  checkWithJudge?: PromptTemplate;
}

/** The outcome of {@link runGenerate}. */
export interface GenerateSummary {
  asked: number;
  written: number;
  passages: number;
  /** Requests answered from the cache. */
  cached: number;
  filters: {
    unparsable: number;
    duplicate: number;
    highOverlap: number;
    dropped: number;
    extra: number;
    /** With `checkWithJudge`: questions the judge graded below 2 (dropped). */
    judgedBelow2: number;
    /** With `checkWithJudge`: questions whose grade could not be parsed twice (dropped). */
    judgeUnparsable: number;
  };
  /** Answers asked again after an unparsable one. */
  parseRetries: number;
  usage: ChatStats;
  seconds: number;
  out: string;
  /** Human lines (and earlier generated ones) kept as they were. */
  keptLines: number;
  ids: string[];
}

/** Lower case, punctuation dropped, whitespace collapsed: the text duplicates are compared on. */
export function normaliseQuestion(q: string): string {
  return q
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

const words = (s: string) => normaliseQuestion(s).split(' ').filter((w) => w !== '');

/**
 * The longest run of consecutive question words that occurs as consecutive words of the passage, as a share of the
 * question's words, in [0, 1]; and the run's length in words.
 */
export function copiedRun(question: string, passage: string): { share: number; run: number } {
  const q = words(question);
  const p = words(passage);
  if (q.length === 0) return { share: 0, run: 0 };
  let best = 0;
  // dynamic programming over (i, j): length of the common run ending at q[i-1], p[j-1]
  let prev = new Array<number>(p.length + 1).fill(0);
  for (let i = 1; i <= q.length; i++) {
    const cur = new Array<number>(p.length + 1).fill(0);
    for (let j = 1; j <= p.length; j++) {
      if (q[i - 1] === p[j - 1]) {
        cur[j] = prev[j - 1] + 1;
        if (cur[j] > best) best = cur[j];
      }
    }
    prev = cur;
  }
  return { share: best / q.length, run: best };
}

/** `syn-` + 16 hex digits of sha256 over the passage's document and range and the question text. */
export function syntheticId(doc: string, start: number, end: number, question: string): string {
  return `syn-${sha256Text(JSON.stringify([doc, start, end, question])).slice(0, 16)}`;
}

/** Ids and normalised texts of an existing questions.jsonl (lines that are not JSON objects are kept, not read). */
function readExisting(file: string): { text: string; ids: Set<string>; texts: Set<string>; lines: number } {
  if (!existsSync(file)) return { text: '', ids: new Set(), texts: new Set(), lines: 0 };
  const text = readFileSync(file, 'utf8');
  const ids = new Set<string>();
  const texts = new Set<string>();
  let lines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    lines++;
    try {
      const o = JSON.parse(line) as { id?: unknown; question?: unknown };
      if (o.id !== undefined) ids.add(String(o.id));
      if (typeof o.question === 'string') texts.add(normaliseQuestion(o.question));
    } catch {
      // not ours to judge: the file's loader reports it
    }
  }
  return { text, ids, texts, lines };
}

/**
 * Generates questions (see the module doc) and appends them to `outFile`.
 * @throws HarnessError `USAGE` (questions < 1, perDocument < 1, an unknown style), `LLM_FAILED` (probe or a request
 *   failing after its retries; nothing is written then), `OUTPUT_INVALID` (the file cannot be written).
 */
export async function runGenerate(input: GenerateInput): Promise<GenerateSummary> {
  const t0 = performance.now();
  const { client, cache, prompt, dataset } = input;
  const perDocument = input.perDocument ?? 1;
  const styles = input.styles ?? ['plain'];
  const threshold = input.overlapThreshold ?? 0.7;
  if (!Number.isSafeInteger(input.questions) || input.questions < 1) {
    throw new HarnessError('USAGE', `--questions must be a whole number ≥ 1 (got ${input.questions})`, { remedy: 'ask for at least one question, e.g. --questions 60' });
  }
  if (!Number.isSafeInteger(perDocument) || perDocument < 1) {
    throw new HarnessError('USAGE', `--per-document must be a whole number ≥ 1 (got ${perDocument})`, { remedy: 'e.g. --per-document 2' });
  }
  for (const s of styles) {
    if (!(s in GENERATION_STYLES)) {
      throw new HarnessError('USAGE', `unknown style ${JSON.stringify(s)}`, { remedy: `use one or more of ${Object.keys(GENERATION_STYLES).join(', ')}` });
    }
  }
  const before = client.stats();
  const chunks = chunkDocuments(dataset.docs, { size: input.chunkSize === undefined ? 256 : input.chunkSize, overlap: 0 });
  const byDoc = new Map<string, Chunk[]>();
  for (const c of chunks) {
    const list = byDoc.get(c.docId);
    if (list) list.push(c);
    else byDoc.set(c.docId, [c]);
  }
  // Seeded order of documents (Fisher-Yates over the sorted ids), one passage drawn from each.
  const rand = seededRandom(input.seed ?? 42);
  const docIds = [...byDoc.keys()].sort();
  for (let i = docIds.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [docIds[i], docIds[j]] = [docIds[j], docIds[i]];
  }
  const plan: { chunk: Chunk; count: number; style: string }[] = [];
  let wanted = input.questions;
  for (const id of docIds) {
    if (wanted <= 0) break;
    const list = byDoc.get(id) as Chunk[];
    const chunk = list[Math.floor(rand() * list.length)];
    const count = Math.min(perDocument, wanted);
    plan.push({ chunk, count, style: styles[plan.length % styles.length] });
    wanted -= count;
  }

  const ask = plan.map((p) => {
    const values = { passage: p.chunk.text, count: String(p.count), style: GENERATION_STYLES[p.style] };
    const key = answerKey(client, prompt.sha, [values.passage, values.count, values.style]);
    return { ...p, key, content: fillPrompt(prompt.text, values), answer: undefined as string[] | undefined };
  });
  let cached = 0;
  for (const a of ask) {
    const hit = cache.get(a.key);
    const parsed = hit === undefined ? undefined : parseQuestionsAnswer(hit.text);
    if (parsed !== undefined) {
      a.answer = parsed;
      cached++;
    }
  }
  const todo = ask.filter((a) => a.answer === undefined);
  if (todo.length > 0) await client.probeOnce();
  let parseRetries = 0;
  let unparsable = 0;
  let next = 0;
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    while (firstError === undefined && next < todo.length) {
      const a = todo[next++];
      try {
        let ans = await client.complete(a.content);
        let parsed = parseQuestionsAnswer(ans.text);
        if (parsed === undefined) {
          parseRetries++;
          ans = await client.complete(a.content);
          parsed = parseQuestionsAnswer(ans.text);
        }
        if (parsed === undefined) unparsable++;
        else {
          cache.put(a.key, client.serverModel, ans);
          a.answer = parsed;
        }
      } catch (e) {
        firstError ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(client.concurrency, todo.length) }, worker));
  if (firstError !== undefined) throw firstError;

  const existing = readExisting(input.outFile);
  const seenTexts = new Set(existing.texts);
  const filters = { unparsable, duplicate: 0, highOverlap: 0, dropped: 0, extra: 0, judgedBelow2: 0, judgeUnparsable: 0 };
  const candidates: { line: { id: string; question: string; tags: string[]; evidence: { doc: string; start: number; end: number }[] }; passage: string }[] = [];
  for (const a of ask) {
    if (a.answer === undefined) continue;
    const given = a.answer.slice(0, a.count);
    filters.extra += a.answer.length - given.length;
    for (const q of given) {
      const norm = normaliseQuestion(q);
      const id = syntheticId(a.chunk.docId, a.chunk.start, a.chunk.end, q);
      if (norm === '' || seenTexts.has(norm) || existing.ids.has(id)) {
        filters.duplicate++;
        continue;
      }
      seenTexts.add(norm);
      const run = copiedRun(q, a.chunk.text);
      const high = run.share >= threshold && run.run >= 4;
      if (high) filters.highOverlap++;
      if (high && input.dropOverlap) {
        filters.dropped++;
        continue;
      }
      const tags = ['synthetic', ...(styles.length > 1 ? [a.style] : []), ...(high ? ['high-overlap'] : [])];
      candidates.push({ line: { id, question: q, tags, evidence: [{ doc: a.chunk.docId, start: a.chunk.start, end: a.chunk.end }] }, passage: a.chunk.text });
    }
  }
  // --check-with-judge: grade each candidate against its passage (workers as above); keep grades ≥ 2.
  const keep = candidates.map(() => true);
  if (input.checkWithJudge !== undefined && candidates.length > 0) {
    const judgePrompt = input.checkWithJudge;
    let at = 0;
    let err: unknown;
    const judgeWorker = async (): Promise<void> => {
      while (err === undefined && at < candidates.length) {
        const i = at++;
        try {
          const g = await gradePair(client, cache, judgePrompt, candidates[i].line.question, candidates[i].passage);
          if (g.retried) parseRetries++;
          if (g.grade === undefined) {
            filters.judgeUnparsable++;
            keep[i] = false;
          } else if (g.grade < 2) {
            filters.judgedBelow2++;
            keep[i] = false;
          }
        } catch (e) {
          err ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(client.concurrency, candidates.length) }, judgeWorker));
    if (err !== undefined) throw err;
  }
  const out: string[] = [];
  const ids: string[] = [];
  candidates.forEach((c, i) => {
    if (!keep[i]) return;
    const check = questionLineSchema.safeParse(c.line);
    if (!check.success) throw new Error(`generated line does not fit the question schema: ${JSON.stringify(c.line)} (${check.error.message})`);
    out.push(JSON.stringify(c.line));
    ids.push(c.line.id);
  });
  if (out.length > 0) {
    const head = existing.text === '' || existing.text.endsWith('\n') ? existing.text : `${existing.text}\n`;
    writeAtomic(input.outFile, `${head}${out.join('\n')}\n`);
  }
  const after = client.stats();
  return {
    asked: input.questions,
    written: out.length,
    passages: plan.length,
    cached,
    filters,
    parseRetries,
    usage: {
      model: after.model,
      requests: after.requests - before.requests,
      retries: after.retries - before.retries,
      waitSeconds: after.waitSeconds - before.waitSeconds,
      tokensIn: after.tokensIn - before.tokensIn,
      tokensOut: after.tokensOut - before.tokensOut,
      cost: after.cost === null ? null : after.cost - (before.cost ?? 0),
    },
    seconds: (performance.now() - t0) / 1000,
    out: input.outFile,
    keptLines: existing.lines,
    ids,
  };
}

function writeAtomic(file: string, text: string): void {
  writeFileAtomic(file, text, 'choose an --out path in a folder you can write to, with free space');
}

/** The summary as text lines for the terminal. */
export function formatGenerateSummary(s: GenerateSummary): string {
  const f = s.filters;
  const u = s.usage;
  return (
    [
      `generate: ${s.written} questions written to ${s.out} (${s.asked} asked for, from ${s.passages} passages; ${s.keptLines} existing lines kept as they were)`,
      `filters: ${f.unparsable} unparsable answers, ${f.duplicate} duplicates, ${f.highOverlap} high lexical overlap (${f.dropped ? `${f.dropped} dropped` : 'tagged high-overlap, kept'}), ${f.extra} beyond the count asked, ${f.judgedBelow2} graded below 2 by the judge and ${f.judgeUnparsable} without a parsable grade (dropped; --check-with-judge)`,
      `cost: ${u.requests} requests (probe included), ${s.cached} answers from the cache, ${u.retries} retries, ${s.parseRetries} asked again after an unparsable answer, ${u.waitSeconds.toFixed(1)} s waited, tokens in ${u.tokensIn}, out ${u.tokensOut}${u.cost !== null ? `, cost ${u.cost.toFixed(4)}` : ''}; ${s.seconds.toFixed(1)} s`,
    ].join('\n') + '\n'
  );
}
