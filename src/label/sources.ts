/**
 * Where a sweep's labels came from (issue 21): of the labels the dataset's labels file holds, how many a person and
 * how many a model graded through the judgments log (`<labels>.judgments.jsonl`, src/label/formats.ts), and what
 * the `judge` runs that wrote the model's grades cost (`<labels>.judge-usage.jsonl`). Recorded in the sweep's
 * manifest as `labels` and said in one line of the report's method section.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Dataset } from '../types.js';
import { datasetLabelsFile, judgeUsagePath, judgmentsLogPath, readJudgments, resolveLabels } from './formats.js';

/** One model's `judge` runs, summed: requests, retries, seconds waited, tokens, money (null when no price was given). */
export interface JudgeUsage {
  model: string;
  runs: number;
  requests: number;
  retries: number;
  waitSeconds: number;
  tokensIn: number;
  tokensOut: number;
  cost: number | null;
}

/** The manifest's `labels`. */
export interface LabelSources {
  /** The dataset's labels file and its judgments log (null when there is none). */
  file: string;
  log: string | null;
  /** Document-level labels the sweep loaded (every `relevant` entry of every question, grade 0 included). */
  loaded: number;
  /** Of those, the ones whose grade a person gave in the log (the grade the log resolves to equals the loaded one). */
  human: number;
  /** Of those, the ones a model gave (`llm:<model>`) and no person overrode. */
  llm: number;
  /** Judgments in the log that the labels file does not hold yet (not merged, or conflicting): not used by this sweep. */
  notMerged: number;
  /** Per model, what its `judge` runs cost (from the usage log); empty when there is none. */
  judge: JudgeUsage[];
}

/**
 * Counts the sources of the loaded labels (document level; chunk and evidence labels are counted as `notMerged`
 * when they are not document grades). Reads the log and the usage log beside the dataset's labels file when they
 * exist; a damaged usage line is skipped (it is a summary, not a label).
 * @throws HarnessError `LABEL_INVALID` when a complete line of the judgments log is invalid (src/label/formats.ts).
 */
export function labelSources(dataset: Pick<Dataset, 'root' | 'layout' | 'split' | 'questions'>): LabelSources {
  const file = datasetLabelsFile(dataset.root, dataset.layout, dataset.split);
  const logFile = judgmentsLogPath(file);
  let loaded = 0;
  const grades = new Map<string, ReadonlyMap<string, number>>();
  for (const q of dataset.questions) {
    const m = new Map(Object.entries(q.relevant));
    loaded += m.size;
    grades.set(q.id, m);
  }
  let human = 0;
  let llm = 0;
  let notMerged = 0;
  const hasLog = existsSync(logFile);
  if (hasLog) {
    for (const l of resolveLabels(readJudgments(logFile).judgments)) {
      const g = grades.get(l.qid)?.get(l.doc);
      if (l.chunk === undefined && g === l.grade) {
        if (l.source === 'human') human++;
        else llm++;
      } else notMerged++;
    }
  }
  const byModel = new Map<string, JudgeUsage>();
  const usageFile = judgeUsagePath(file);
  if (existsSync(usageFile)) {
    for (const line of readFileSync(usageFile, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      let u: Partial<JudgeUsage> & { model?: unknown };
      try {
        u = JSON.parse(line) as typeof u;
      } catch {
        continue;
      }
      if (typeof u.model !== 'string') continue;
      const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
      const t = byModel.get(u.model) ?? { model: u.model, runs: 0, requests: 0, retries: 0, waitSeconds: 0, tokensIn: 0, tokensOut: 0, cost: null };
      t.runs++;
      t.requests += num(u.requests);
      t.retries += num(u.retries);
      t.waitSeconds += num(u.waitSeconds);
      t.tokensIn += num(u.tokensIn);
      t.tokensOut += num(u.tokensOut);
      if (typeof u.cost === 'number' && Number.isFinite(u.cost)) t.cost = (t.cost ?? 0) + u.cost;
      byModel.set(u.model, t);
    }
  }
  return { file, log: hasLog ? logFile : null, loaded, human, llm, notMerged, judge: [...byModel.values()] };
}
