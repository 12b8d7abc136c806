/**
 * The harness around a retriever (built-in or a user's): it asks for each question's list, validates what comes
 * back, orders it by the one tie rule and cuts it to the depth, with a timeout per search and bounded concurrency,
 * and wraps any failure once with the retriever's name and the question id (HarnessError `RETRIEVER_FAILED`).
 */
import { performance } from 'node:perf_hooks';
import pLimit from 'p-limit';
import { HarnessError, isHarnessError } from '../errors.js';
import { rankByRule } from '../retrieve/rank.js';
import type { RetrievedHit, Retriever, RetrieverQuestion } from '../retrieve/retriever.js';
import type { Hit } from '../types.js';

/**
 * A list longer than `depth × LIST_MARGIN` is refused as it arrives (issue 24): a retriever may return a few more hits
 * than asked (the harness cuts them), but one returning a million per question would hold them all in memory before
 * any was checked.
 */
export const LIST_MARGIN = 10;

/** Options of {@link collectLists}. */
export interface CollectOptions {
  /** Maps a returned id to the canonical id (a chunk id, or a document id), or null when the dataset does not know it. */
  resolveId: (id: string) => string | null;
  /** One `search` (or one `searchBatch` call, per question it covers) may take at most this long; default none. */
  timeoutMs?: number;
  /** `search` calls in flight at once; default 4. */
  concurrency?: number;
  signal?: AbortSignal;
  /** Called with (questions done, questions in all). */
  onProgress?: (done: number, total: number) => void;
}

/**
 * One list per question (in order), each validated, ordered by `rankByRule` and cut to `depth`, plus the mean
 * milliseconds per question. Uses `searchBatch` when the retriever has one.
 *
 * Validation: every hit must be an object with a string `id` the dataset knows (`resolveId`) and a finite numeric
 * `score`; an id may appear once per list; the result must be an array. As each list arrives (before the others are
 * awaited) it may hold at most `depth × LIST_MARGIN` hits.
 * @throws HarnessError('RETRIEVER_FAILED') naming the retriever, the question id and the offending value; the cause is
 *   kept. A search that does not settle within `timeoutMs` fails the same way.
 */
export async function collectLists(
  name: string,
  retriever: Retriever,
  questions: readonly RetrieverQuestion[],
  depth: number,
  options: CollectOptions,
): Promise<{ lists: Hit[][]; queryMs: number }> {
  const signal = options.signal ?? new AbortController().signal;
  const t0 = performance.now();
  let raw: unknown[];
  if (retriever.searchBatch) {
    const timeout = options.timeoutMs ? options.timeoutMs * Math.max(1, questions.length) : undefined;
    raw = (await guard(name, questions.length === 1 ? questions[0].id : null, () => retriever.searchBatch!(questions, depth, signal), timeout)) as unknown[];
    if (!Array.isArray(raw) || raw.length !== questions.length)
      throw fail(name, null, `searchBatch returned ${Array.isArray(raw) ? `${raw.length} lists` : describe(raw)} for ${questions.length} questions`);
    raw.forEach((list, j) => checkLength(name, questions[j].id, list, depth));
    options.onProgress?.(questions.length, questions.length);
  } else {
    const limit = pLimit(options.concurrency ?? 4);
    let done = 0;
    // After the first failure, the questions still queued are not searched (the unit has failed already).
    let failed = false;
    raw = await Promise.all(
      questions.map((q) =>
        limit(async () => {
          if (failed) return undefined;
          try {
            const r = await guard(name, q.id, async () => retriever.search(q, depth, signal), options.timeoutMs);
            checkLength(name, q.id, r, depth);
            options.onProgress?.(++done, questions.length);
            return r;
          } catch (e) {
            failed = true;
            throw e;
          }
        }),
      ),
    );
  }
  const queryMs = questions.length === 0 ? 0 : (performance.now() - t0) / questions.length;
  const lists = questions.map((q, j) => validate(name, q.id, raw[j], depth, options.resolveId));
  return { lists, queryMs };
}

/** Throws when `value` is an array longer than `depth × LIST_MARGIN` (see {@link LIST_MARGIN}). */
function checkLength(name: string, qid: string, value: unknown, depth: number): void {
  const max = depth * LIST_MARGIN;
  if (Array.isArray(value) && value.length > max)
    throw fail(
      name,
      qid,
      `search returned ${value.length} hits for depth ${depth}, more than ${LIST_MARGIN} × the depth asked (${max})`,
      `return at most the depth asked (${depth}) per question; the harness cuts and ranks the list`,
    );
}

/**
 * `work` (a retriever factory's promise), or a `RETRIEVER_FAILED` naming the retriever when it has not settled after
 * `timeoutMs` (the retriever's own `timeoutMs`, issue 24: a factory that never resolves used to end the process with
 * Node's exit 13 and no message). No timeout when `timeoutMs` is undefined or 0.
 *
 * A factory that resolves after its timeout has been given up on: nobody will use or close what it made, so its
 * `close()` (when the value has one) is called at once, and awaited errors from it are ignored (the rows already
 * failed with the timeout); `onLateClose`, when given, hears of each such close (for tests and diagnostics). A late
 * rejection is ignored the same way.
 */
export async function factoryWithTimeout<T>(
  name: string,
  work: Promise<T>,
  timeoutMs: number | undefined,
  onLateClose?: (outcome: { closed: true } | { closed: false; error: unknown }) => void,
): Promise<T> {
  if (!timeoutMs) return work;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        void work.then(
          (late) => closeLate(late, onLateClose),
          () => undefined,
        );
        reject(
          new HarnessError('RETRIEVER_FAILED', `retriever ${name}: its factory did not settle within ${timeoutMs} ms (timeoutMs)`, {
            remedy: 'raise timeoutMs for this retriever, or make its factory resolve (a missing await or a server that never answers)',
          }),
        );
      },
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Closes what a factory made after its timeout (when it has a `close()`), reporting the outcome to `report`. */
async function closeLate(late: unknown, report?: (outcome: { closed: true } | { closed: false; error: unknown }) => void): Promise<void> {
  const close = late !== null && typeof late === 'object' ? (late as { close?: unknown }).close : undefined;
  if (typeof close !== 'function') return;
  try {
    await (close as () => unknown).call(late);
    report?.({ closed: true });
  } catch (error) {
    report?.({ closed: false, error });
  }
}

function validate(name: string, qid: string, value: unknown, depth: number, resolveId: (id: string) => string | null): Hit[] {
  if (!Array.isArray(value)) throw fail(name, qid, `search returned ${describe(value)}, not an array of { id, score }`);
  const seen = new Set<string>();
  const hits: Hit[] = [];
  for (const [i, h] of (value as RetrievedHit[]).entries()) {
    if (!h || typeof h !== 'object' || typeof h.id !== 'string')
      throw fail(name, qid, `hit ${i + 1} is ${describe(h)}; each hit must be { id: string, score: number }`);
    if (typeof h.score !== 'number' || !Number.isFinite(h.score))
      throw fail(name, qid, `hit ${JSON.stringify(h.id)} has score ${describe(h.score)}; scores must be finite numbers`);
    const id = resolveId(h.id);
    if (id === null)
      throw fail(name, qid, `returned id ${JSON.stringify(h.id)}, which is neither a chunk id of its chunking nor a document id of the dataset`);
    if (seen.has(id)) throw fail(name, qid, `returned id ${JSON.stringify(h.id)} twice; each id may appear once per list`);
    seen.add(id);
    hits.push({ id, score: h.score });
  }
  return rankByRule(hits, depth);
}

async function guard<T>(name: string, qid: string | null, run: () => Promise<T>, timeoutMs: number | undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const work = run();
    if (!timeoutMs) return await work;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(fail(name, qid, `search did not settle within ${timeoutMs} ms`, 'raise timeoutMs for this retriever, or make its search faster')),
        timeoutMs,
      );
    });
    return await Promise.race([work, timeout]);
  } catch (e) {
    if (isHarnessError(e, 'RETRIEVER_FAILED')) throw e;
    throw fail(name, qid, `search threw: ${e instanceof Error ? e.message : String(e)}`, undefined, e);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function fail(name: string, qid: string | null, what: string, remedy?: string, cause?: unknown): HarnessError {
  return new HarnessError('RETRIEVER_FAILED', `retriever ${name}${qid === null ? '' : `, question ${qid}`}: ${what}`, {
    remedy: remedy ?? 'fix the retriever; its rows are reported as failed and the rest of the grid still runs',
    ...(cause === undefined ? {} : { cause }),
  });
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'number') return String(v);
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
