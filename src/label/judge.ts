/**
 * The LLM judge: grades every (question, passage) pair of a pool on 0-3 with a chat model and appends the grades to
 * the judgments log of a labels file (`<labels>.judgments.jsonl`, src/label/formats.ts) as `assessor: "llm:<model>"`,
 * beside the persons' grades. It never writes the labels file itself: the merge (a person's grade always wins,
 * {@link resolveLabels}) is the labelling page's (`retrieval-sweep label POOL --labels FILE`).
 *
 * Per pair:
 * 1. the answer cache (src/llm/cache.ts) is asked first; a cached answer costs no request;
 * 2. otherwise the prompt is sent; an answer whose grade does not parse ({@link parseFinalScore}: no
 *    `##final score: N` line, or N not 0..3) is asked once more with the same request; if that fails too, a `failed`
 *    judgment with the raw text is appended (never a guessed grade) and nothing is cached, so the next run asks again;
 *    A request the server refuses for its content (HTTP 400, 413, 422: a passage past the model's context) is a
 *    `failed` judgment with the server's message, and the run goes on; any other failure stops the run;
 * 3. a parsed answer is cached and, unless the log's current grade of this model for the pair is already the same, a
 *    `grade` judgment is appended (fsynced). A rerun therefore adds no line and sends no request.
 *
 * The probe request (src/llm/chat.ts) is sent only when something must be asked, before the first real request, so a
 * wrong key, model or address fails before any work and a fully cached run sends nothing.
 *
 * Calibration ({@link calibrate}): the model's grades against the persons' on the pairs both graded, from the log
 * (persons' resolved grades) and from the dataset's own labels when given.
 */
import { appendFileSync } from 'node:fs';
import { HarnessError, isHarnessError } from '../errors.js';
import { answerKey, type ChatCache } from '../llm/cache.js';
import type { ChatAnswer, ChatClient, ChatStats } from '../llm/chat.js';
import { HttpFailure } from '../net/http.js';
import { fillPrompt, parseFinalScore, type PromptTemplate } from '../llm/prompts.js';
import { agreement, type Agreement } from '../score/agreement.js';
import type { Dataset } from '../types.js';
import { IdIndex } from '../id-index.js';
import {
  foldJudgments,
  isModelAssessor,
  judgeUsagePath,
  judgmentsLogPath,
  openJudgmentLog,
  pairKey,
  resolveLabels,
  type Judgment,
  type PoolHeader,
  type PoolPair,
} from './formats.js';

/** Statuses that refuse one request for what it holds (not the key, model or address): the pair fails, the run goes on. */
const REJECT_STATUS = new Set([400, 413, 422]);

/** The HTTP status when `e` is a request the server refused for its content ({@link REJECT_STATUS}), else undefined. */
function rejectedStatus(e: unknown): number | undefined {
  if (!isHarnessError(e, 'LLM_FAILED')) return undefined;
  const cause = (e as Error & { cause?: unknown }).cause;
  return cause instanceof HttpFailure && cause.kind === 'status' && cause.status !== undefined && REJECT_STATUS.has(cause.status) ? cause.status : undefined;
}

/** Longest raw answer kept in a `failed` judgment (characters), as formats.ts documents. */
export const RAW_LIMIT = 2000;
/** Below this linear-weighted kappa the summary says the model's labels change the decision. */
export const KAPPA_WARN = 0.4;
/** The sentence said when agreement is too low. */
export const LOW_AGREEMENT = 'model labels change the decision; label more by hand';

/** What {@link runJudge} needs. */
export interface JudgeInput {
  header: PoolHeader;
  pairs: readonly PoolPair[];
  /** The labels file whose judgments log receives the grades. */
  labelsFile: string;
  client: ChatClient;
  cache: ChatCache;
  prompt: PromptTemplate;
  /** Grades from the dataset's own labels for pooled pairs (pair key → grade), for calibration. */
  datasetGrades?: ReadonlyMap<string, number>;
  /** Send the probe before the first request. Default true. */
  probe?: boolean;
  /** Clock for the judgments' `time`. Default `new Date()`. */
  now?: () => Date;
  /** Called after each pair is done (cached or asked). */
  onProgress?: (done: number, total: number) => void;
}

/** Agreement of the model with persons on the pairs both graded. */
export interface Calibration {
  /** Pairs with both a person's grade (0..3) and this model's grade. */
  n: number;
  /** Where the persons' grades came from: pairs graded in the log, and pairs labelled in the dataset (log wins). */
  sources: { log: number; dataset: number };
  /** Person grades above 3 (a dataset on a wider scale), left out. */
  outOfScale: number;
  /** Confusion matrix (rows: person, columns: model), kappas, binary agreement at `threshold`; null when n = 0. */
  agreement: Agreement | null;
  threshold: number;
  /** True when the linear-weighted kappa is below {@link KAPPA_WARN}. */
  lowAgreement: boolean;
  /** One sentence for the summary. */
  verdict: string;
}

/** The outcome of {@link runJudge}. */
export interface JudgeSummary {
  /** `llm:<model>`. */
  assessor: string;
  pairs: number;
  /** Pairs answered from the cache. */
  cached: number;
  /** Pairs asked of the server. */
  asked: number;
  /** Pairs with a grade now (cached or asked). */
  graded: number;
  /** Pairs recorded as failed (unparsable twice, or refused by the server). */
  failed: number;
  /** Of those, pairs whose request the server refused with HTTP 400, 413 or 422 (e.g. past the context length). */
  rejected: number;
  /** Answers that did not parse and were asked again. */
  parseRetries: number;
  /** Judgments appended to the log. */
  appended: number;
  /** Pairs per model grade 0..3. */
  grades: [number, number, number, number];
  /** Requests, retries, waits, tokens, cost (this run). */
  usage: ChatStats;
  /** Seconds from start to end. */
  seconds: number;
  log: string;
  calibration: Calibration;
  warnings: string[];
}

/** The person grades of pooled pairs from a dataset's labels: document level `relevant[doc]`, chunk level `chunks`. */
export function datasetGrades(dataset: Dataset, header: PoolHeader, pairs: readonly PoolPair[]): Map<string, number> {
  // The pooled documents' texts only, read when a pair needs one (a stored corpus is not read whole), through an id
  // table that holds any number of documents (src/id-index.ts).
  const docIndex = IdIndex.over(dataset.docs.length, (i) => dataset.docs[i].id);
  const questions = new Map(dataset.questions.map((q) => [q.id, q] as const));
  const out = new Map<string, number>();
  for (const p of pairs) {
    const at = docIndex.get(p.doc);
    const text = at === undefined ? undefined : dataset.docs[at].text;
    if (text === undefined || text.slice(p.start, p.end) !== p.passage) {
      throw new HarnessError('LABEL_INVALID', `pair ${p.pair} (${p.qid}, ${p.doc}) of the pool does not match the dataset ${dataset.root}: ${text === undefined ? 'no such document' : 'the passage text differs'}`, {
        location: { path: `pair ${p.pair}` },
        remedy: `the pool was made from another dataset (${header.dataset.name}); pass the dataset it was made from with --dataset, or make the pool again`,
      });
    }
    const q = questions.get(p.qid);
    if (q === undefined) continue;
    const g = header.level === 'chunk' && p.chunk !== undefined ? q.chunkLabels?.[p.chunk] : q.relevant[p.doc];
    if (g !== undefined) out.set(pairKey(p), g);
  }
  return out;
}

/**
 * Agreement of one model's grades with persons' (Cohen 1960/1968 via src/score/agreement.ts; linear weights).
 * @param judgments the whole log (persons' grades resolved by {@link resolveLabels} over persons only).
 * @param assessor `llm:<model>` whose grades are compared.
 * @param datasetGrades person grades from the dataset (used where the log has no person's grade).
 * @param threshold relevance threshold for the binary figures (grade ≥ threshold), clamped to 1..3.
 */
export function calibrate(
  judgments: readonly Judgment[],
  assessor: string,
  datasetGrades: ReadonlyMap<string, number>,
  threshold: number,
): Calibration {
  const folded = foldJudgments(judgments);
  const human = new Map<string, { grade: number; from: 'log' | 'dataset' }>();
  for (const [k, g] of datasetGrades) human.set(k, { grade: g, from: 'dataset' });
  for (const r of resolveLabels(judgments.filter((j) => !isModelAssessor(j.assessor)))) {
    human.set(pairKey(r), { grade: r.grade, from: 'log' });
  }
  const pairs: [number, number][] = [];
  const sources = { log: 0, dataset: 0 };
  let outOfScale = 0;
  for (const [k, h] of human) {
    const m = folded.get(k)?.get(assessor)?.grade;
    if (m === undefined) continue;
    if (h.grade > 3) {
      outOfScale++;
      continue;
    }
    pairs.push([h.grade, m]);
    sources[h.from]++;
  }
  const t = Math.min(3, Math.max(1, threshold));
  if (pairs.length === 0) {
    return {
      n: 0,
      sources,
      outOfScale,
      agreement: null,
      threshold: t,
      lowAgreement: false,
      verdict:
        'no pooled pair has a person\'s grade yet: agreement with people is unknown; label some pairs with `retrieval-sweep label POOL --labels FILE` and run judge again (cached: no request)',
    };
  }
  const a = agreement(pairs, { grades: 4, weights: 'linear', threshold: t });
  const low = !(a.weightedKappa >= KAPPA_WARN);
  return {
    n: pairs.length,
    sources,
    outOfScale,
    agreement: a,
    threshold: t,
    lowAgreement: low,
    verdict: low
      ? `weighted kappa ${fmt(a.weightedKappa)} < ${KAPPA_WARN} on ${pairs.length} pairs: ${LOW_AGREEMENT}`
      : `weighted kappa ${fmt(a.weightedKappa)} ≥ ${KAPPA_WARN} on ${pairs.length} pairs${pairs.length < 30 ? ' (fewer than 30 pairs: label more to be sure)' : ''}`,
  };
}

function fmt(x: number): string {
  return Number.isNaN(x) ? 'NaN' : x.toFixed(3);
}

/**
 * Grades every pair of a pool (see the module doc) and returns the summary. The log is closed on return and on error.
 * @throws HarnessError `LLM_FAILED` (probe or a request failing after its retries: what was answered before is in the
 *   cache and the log), `LABEL_INVALID` (a damaged log), `CACHE_FAILED`.
 */
export async function runJudge(input: JudgeInput): Promise<JudgeSummary> {
  const t0 = performance.now();
  const { client, cache, prompt, pairs } = input;
  const assessor = `llm:${client.serverModel}`;
  const now = input.now ?? (() => new Date());
  const before = client.stats();
  const keyOf = (p: PoolPair) => answerKey(client, prompt.sha, [p.question, p.passage]);
  // Cache first, then the probe, then the log: a wrong key, model or address fails before anything is written.
  const hits: { p: PoolPair; grade: number }[] = [];
  const todo: { p: PoolPair; key: string }[] = [];
  for (const p of pairs) {
    const key = keyOf(p);
    const hit = cache.get(key);
    const parsed = hit === undefined ? undefined : parseFinalScore(hit.text);
    if (parsed?.ok) hits.push({ p, grade: parsed.grade });
    else todo.push({ p, key });
  }
  if (todo.length > 0 && input.probe !== false) await client.probeOnce();
  const log = openJudgmentLog(judgmentsLogPath(input.labelsFile));
  const warnings = [...log.warnings];
  try {
    const state = foldJudgments(log.judgments);
    const current = (p: PoolPair) => state.get(pairKey(p))?.get(assessor);
    const grades: [number, number, number, number] = [0, 0, 0, 0];
    const cached = hits.length;
    let asked = 0;
    let failed = 0;
    let parseRetries = 0;
    let rejected = 0;
    let appended = 0;
    let done = 0;
    const base = (p: PoolPair): Omit<Judgment, 'action'> => ({
      v: 1,
      time: now().toISOString(),
      assessor,
      qid: p.qid,
      doc: p.doc,
      ...(p.chunk !== undefined ? { chunk: p.chunk } : {}),
      start: p.start,
      end: p.end,
      corpus: input.header.dataset.corpus,
    });
    const record = (p: PoolPair, grade: number): void => {
      grades[grade]++;
      if (current(p)?.grade !== grade || current(p)?.failed !== undefined) {
        log.append({ ...base(p), action: 'grade', grade });
        appended++;
      }
      input.onProgress?.(++done, pairs.length);
    };
    // Cached grades the log lacks go in with one write and one fsync.
    const fromCache: Judgment[] = [];
    for (const h of hits) {
      grades[h.grade]++;
      const cur = current(h.p);
      if (cur?.grade !== h.grade || cur?.failed !== undefined) fromCache.push({ ...base(h.p), action: 'grade', grade: h.grade });
    }
    log.appendMany(fromCache);
    appended += fromCache.length;
    done = hits.length;
    if (done > 0) input.onProgress?.(done, pairs.length);
    // Workers pull pairs from one queue; after a failure no new request starts, the ones in flight finish (their
    // answers are cached and logged), then the first error is thrown.
    let next = 0;
    let firstError: unknown;
    const one = async ({ p, key }: { p: PoolPair; key: string }): Promise<void> => {
      const content = fillPrompt(prompt.text, { question: p.question, passage: p.passage });
      asked++;
      let answer: ChatAnswer;
      try {
        answer = await client.complete(content);
      } catch (e) {
        const status = rejectedStatus(e);
        if (status === undefined) throw e;
        // The server refuses this one request (a passage past the model's context, typically): the pair is failed
        // with the server's message, the rest of the pool goes on.
        failed++;
        rejected++;
        log.append({ ...base(p), action: 'failed', raw: (e as Error).message.slice(0, RAW_LIMIT) });
        appended++;
        warnings.push(`pair ${p.pair} (${p.qid}, ${p.doc}): the server refused the request (HTTP ${status}); recorded as failed with its message`);
        input.onProgress?.(++done, pairs.length);
        return;
      }
      let parsed = parseFinalScore(answer.text);
      if (!parsed.ok) {
        parseRetries++;
        answer = await client.complete(content);
        parsed = parseFinalScore(answer.text);
      }
      if (parsed.ok) {
        cache.put(key, client.serverModel, answer);
        record(p, parsed.grade);
      } else {
        failed++;
        log.append({ ...base(p), action: 'failed', raw: client.redact(answer.text).slice(0, RAW_LIMIT) });
        appended++;
        warnings.push(
          `pair ${p.pair} (${p.qid}, ${p.doc}): the answer had ${parsed.reason === 'no-score-line' ? 'no "##final score: N" line' : 'a final score outside 0-3'} twice; recorded as failed with its text`,
        );
        input.onProgress?.(++done, pairs.length);
      }
    };
    const worker = async (): Promise<void> => {
      while (firstError === undefined && next < todo.length) {
        const item = todo[next++];
        try {
          await one(item);
        } catch (e) {
          firstError ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(client.concurrency, todo.length) }, worker));
    if (firstError !== undefined) throw firstError;
    const after = client.stats();
    const usage: ChatStats = {
      model: after.model,
      requests: after.requests - before.requests,
      retries: after.retries - before.retries,
      waitSeconds: after.waitSeconds - before.waitSeconds,
      tokensIn: after.tokensIn - before.tokensIn,
      tokensOut: after.tokensOut - before.tokensOut,
      cost: after.cost === null ? null : after.cost - (before.cost ?? 0),
    };
    // What this run cost, beside the labels file: the next sweep's manifest and report sum it per model
    // (src/label/sources.ts). A summary, not a label: appended, not fsynced.
    appendFileSync(
      judgeUsagePath(input.labelsFile),
      `${JSON.stringify({ time: new Date().toISOString(), assessor, pairs: pairs.length, asked, ...usage })}\n`,
    );
    return {
      assessor,
      pairs: pairs.length,
      cached,
      asked,
      graded: grades.reduce((s, x) => s + x, 0),
      failed,
      rejected,
      parseRetries,
      appended,
      grades,
      usage,
      seconds: (performance.now() - t0) / 1000,
      log: log.file,
      calibration: calibrate(log.judgments, assessor, input.datasetGrades ?? new Map(), input.header.threshold),
      warnings,
    };
  } finally {
    log.close();
  }
}

/** The summary as text lines for the terminal. */
export function formatJudgeSummary(s: JudgeSummary, labelsFile: string, poolFile: string): string {
  const u = s.usage;
  const lines = [
    `judge ${s.assessor}: ${s.pairs} pairs, ${s.graded} graded (grades 0/1/2/3: ${s.grades.join('/')}), ${s.failed} failed${s.rejected > 0 ? ` (${s.rejected} refused by the server)` : ''}; ${s.cached} from the cache, ${s.asked} asked (${s.parseRetries} asked again after an unparsable answer)`,
    `cost: ${u.requests} requests (probe included), ${u.retries} retries, ${u.waitSeconds.toFixed(1)} s waited, tokens in ${u.tokensIn}, out ${u.tokensOut}${u.cost !== null ? `, cost ${u.cost.toFixed(4)}` : ''}; ${s.seconds.toFixed(1)} s`,
    `log: ${s.appended} judgments appended to ${s.log}`,
  ];
  const c = s.calibration;
  if (c.agreement) {
    const a = c.agreement;
    lines.push(
      `calibration on ${c.n} pairs with a person's grade (${c.sources.log} from the log, ${c.sources.dataset} from the dataset${c.outOfScale > 0 ? `; ${c.outOfScale} above grade 3 left out` : ''}):`,
      `  person \\ model   0    1    2    3`,
      ...a.matrix.map((row, i) => `  ${String(i).padEnd(15)}${row.map((x) => String(x).padStart(4)).join(' ')}`),
      `  exact agreement ${fmt(a.exact)}, kappa ${fmt(a.kappa)}, linear-weighted kappa ${fmt(a.weightedKappa)}, binary agreement at grade ≥ ${c.threshold} ${fmt(a.binaryAgreement)} (kappa ${fmt(a.binaryKappa)})`,
    );
  }
  lines.push(`${c.lowAgreement ? 'WARNING: ' : ''}${c.verdict}`);
  lines.push(`to write the labels file: retrieval-sweep label ${poolFile} --labels ${labelsFile} (merges the log; a person's grade wins over the model's)`);
  return lines.join('\n') + '\n';
}

/** Options of {@link calibrationSample}. */
export interface CalibrationSampleOptions {
  /** Pairs wanted, ≥ 1. */
  n: number;
  /** Seed of the draw within each grade. Default 42. */
  seed?: number;
}

/**
 * N pairs for a person to label first, stratified by the model's grade: pairs a person has not graded are grouped by
 * the model's grade 0..3 (failed pairs left out), each group in a seeded random order (Fisher-Yates with
 * src/score/stats.ts seededRandom), then taken round-robin from grade 0 to 3 until N are taken or the groups run out,
 * so every grade the model gave is represented even when it is rare (agreement is worth most there). Returned in the
 * pool's queue order and renumbered 1..k as a pool the labelling page can open.
 * @param modelGrades pair key → the model's grade.
 * @param personGraded pair keys a person graded already (left out).
 */
export function calibrationSample(
  pairs: readonly PoolPair[],
  modelGrades: ReadonlyMap<string, number>,
  personGraded: ReadonlySet<string>,
  opts: CalibrationSampleOptions,
  random: () => number,
): PoolPair[] {
  const groups: PoolPair[][] = [[], [], [], []];
  for (const p of pairs) {
    const k = pairKey(p);
    const g = modelGrades.get(k);
    if (g === undefined || personGraded.has(k) || g < 0 || g > 3) continue;
    groups[g].push(p);
  }
  for (const list of groups) {
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [list[i], list[j]] = [list[j], list[i]];
    }
  }
  const taken: PoolPair[] = [];
  const at = [0, 0, 0, 0];
  while (taken.length < opts.n && groups.some((l, g) => at[g] < l.length)) {
    for (let g = 0; g < 4 && taken.length < opts.n; g++) if (at[g] < groups[g].length) taken.push(groups[g][at[g]++]);
  }
  return taken.sort((a, b) => a.pair - b.pair).map((p, i) => ({ ...p, pair: i + 1 }));
}

/**
 * The two qrels of the decision check, at document level: A = the dataset's labels plus persons' grades from the log
 * (a person's log grade replaces the dataset's for the same pair); B = A plus the model's grades for the pairs A does
 * not grade. Question id → document id → grade.
 */
export function decisionQrels(
  dataset: Pick<Dataset, 'questions'>,
  judgments: readonly Judgment[],
  assessor: string,
): { human: Map<string, Map<string, number>>; withModel: Map<string, Map<string, number>>; modelAdded: number } {
  const human = new Map<string, Map<string, number>>();
  const put = (q: Map<string, Map<string, number>>, qid: string, doc: string, g: number) => {
    let m = q.get(qid);
    if (m === undefined) q.set(qid, (m = new Map()));
    m.set(doc, g);
  };
  for (const q of dataset.questions) for (const [doc, g] of Object.entries(q.relevant)) put(human, q.id, doc, g);
  for (const r of resolveLabels(judgments.filter((j) => !isModelAssessor(j.assessor)))) put(human, r.qid, r.doc, r.grade);
  const withModel = new Map([...human].map(([qid, m]) => [qid, new Map(m)] as const));
  let modelAdded = 0;
  for (const r of resolveLabels(judgments.filter((j) => j.assessor === assessor))) {
    if (withModel.get(r.qid)?.has(r.doc)) continue;
    put(withModel, r.qid, r.doc, r.grade);
    modelAdded++;
  }
  return { human, withModel, modelAdded };
}

/** The Kendall's tau below which the configurations' order under model labels is said to differ (Voorhees 2000). */
export const TAU_WARN = 0.9;

/** What {@link gradePair} found. */
export type PairGrade =
  | { grade: number; cached: boolean; retried: boolean }
  | { grade: undefined; cached: false; retried: true; reason: 'no-score-line' | 'out-of-range'; raw: string };

/**
 * One (question, passage) grade with the judge's rules, for callers other than {@link runJudge} (`generate
 * --check-with-judge`): the cache first (same key as the judge's), else the prompt is sent, an unparsable answer once
 * more, and a parsed answer cached. Writes no log.
 * @throws HarnessError `LLM_FAILED` (a request failing after its retries), `CACHE_FAILED`.
 */
export async function gradePair(client: ChatClient, cache: ChatCache, prompt: PromptTemplate, question: string, passage: string): Promise<PairGrade> {
  const key = answerKey(client, prompt.sha, [question, passage]);
  const hit = cache.get(key);
  if (hit !== undefined) {
    const p = parseFinalScore(hit.text);
    if (p.ok) return { grade: p.grade, cached: true, retried: false };
  }
  const content = fillPrompt(prompt.text, { question, passage });
  await client.probeOnce();
  let answer = await client.complete(content);
  let parsed = parseFinalScore(answer.text);
  const retried = !parsed.ok;
  if (!parsed.ok) {
    answer = await client.complete(content);
    parsed = parseFinalScore(answer.text);
  }
  if (!parsed.ok) return { grade: undefined, cached: false, retried: true, reason: parsed.reason, raw: answer.text.slice(0, RAW_LIMIT) };
  cache.put(key, client.serverModel, answer);
  return { grade: parsed.grade, cached: false, retried };
}
