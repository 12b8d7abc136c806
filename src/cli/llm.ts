/**
 * The commands that use a chat model: `judge` (grade a pool's pairs into a labels file's judgments log) and
 * `generate` (write synthetic questions with evidence). Registered on the program by {@link registerLlmCommands}; each
 * imports what it needs when it runs. Shared flags (a contract scripts rely on): `--model openai-chat:<name>
 * --base-url URL --api-key-env VAR --cache-dir DIR --config FILE`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { HarnessError } from '../errors.js';
import type { ChatOptions } from '../llm/chat.js';
import { checkLabelsFile } from '../label/merge.js';

/** Where commands write (as in main.ts). */
interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** Flags shared by `judge` and `generate`. */
interface ChatCliFlags {
  model?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  cacheDir: string;
  config?: string;
  json?: boolean;
}

/** The default cache folder: the sweep's (`cacheDir` of the config schema). */
export const DEFAULT_CACHE_DIR = '.cache/retrieval-sweep';

function addChatFlags(cmd: Command): Command {
  return cmd
    .option('--model <name>', 'chat model: openai-chat:<name as the server serves it>')
    .option('--base-url <url>', 'server address with /v1, e.g. http://127.0.0.1:8000/v1')
    .option('--api-key-env <var>', 'NAME of the environment variable holding the API key (never the key itself)')
    .option('--cache-dir <dir>', 'folder of chat.sqlite, the answer cache', DEFAULT_CACHE_DIR)
    .option('--config <file>', 'YAML/JSON with the other model options (concurrency, timeoutMs, prices, ...; docs/judging.md)')
    .option('--json', 'print the summary as one JSON object');
}

async function chatOptions(flags: ChatCliFlags): Promise<ChatOptions> {
  const { loadChatConfigFile, resolveChatOptions } = await import('../llm/options.js');
  const file = flags.config !== undefined ? loadChatConfigFile(flags.config) : undefined;
  return resolveChatOptions(file, flags);
}

function positiveInt(name: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new HarnessError('USAGE', `${name} must be a whole number ≥ ${min} (got ${v})`, { remedy: `pass e.g. ${name} 20` });
  }
  return n;
}

interface JudgeFlags extends ChatCliFlags {
  labels?: string;
  calibrate?: string;
  prompt?: string;
  dataset?: string;
}

async function judgeCommand(poolFile: string, flags: JudgeFlags, io: Io): Promise<void> {
  if (flags.labels === undefined || flags.labels.trim() === '') {
    throw new HarnessError('USAGE', '--labels is required', {
      remedy: 'pass the labels file whose judgments log receives the grades, e.g. --labels datasets/mine/questions.jsonl',
    });
  }
  // A wrong --labels fails before any request, not when the log is merged (a folder, a missing or unreadable file).
  checkLabelsFile(path.resolve(flags.labels));
  const calibrateN = positiveInt('--calibrate', flags.calibrate, 1);
  const opts = await chatOptions(flags);
  const [{ readPool }, { runJudge, datasetGrades, formatJudgeSummary }, { ChatClient }, { ChatCache }, prompts] = await Promise.all([
    import('../label/formats.js'),
    import('../label/judge.js'),
    import('../llm/chat.js'),
    import('../llm/cache.js'),
    import('../llm/prompts.js'),
  ]);
  const { header, pairs } = readPool(poolFile);
  const prompt = prompts.loadPrompt(flags.prompt, prompts.DEFAULT_JUDGE_PROMPT, prompts.JUDGE_PLACEHOLDERS);
  const client = new ChatClient(opts);
  // Person grades from the dataset, when its folder is there (the pool's own, or --dataset).
  let grades: Map<string, number> | undefined;
  let dataset: import('../types.js').Dataset | undefined;
  const dsRoot = flags.dataset ?? header.dataset.root;
  if (flags.dataset !== undefined || existsSync(dsRoot)) {
    const { loadDataset } = await import('../load/dataset.js');
    dataset = await loadDataset({ path: path.resolve(dsRoot), labels: 'keep', strictness: 'warn' });
    grades = datasetGrades(dataset, header, pairs);
  } else {
    io.stderr(`note: the pool's dataset ${dsRoot} is not there; calibration uses the judgments log only (pass --dataset DIR)\n`);
  }
  const cache = ChatCache.open(path.join(flags.cacheDir, 'chat.sqlite'));
  let summary;
  try {
    // Progress on stderr: a line at most every 5 s, and the last one.
    let last = performance.now();
    const onProgress = (done: number, total: number) => {
      const now = performance.now();
      if (done === total || now - last >= 5000) {
        last = now;
        io.stderr(`judge: ${done}/${total} pairs\n`);
      }
    };
    summary = await runJudge({ header, pairs, labelsFile: flags.labels, client, cache, prompt, onProgress, ...(grades ? { datasetGrades: grades } : {}) });
  } finally {
    cache.close();
  }
  for (const w of summary.warnings) io.stderr(`warning: ${w}\n`);
  const judge = await import('../label/judge.js');
  const { readJudgments, judgmentsLogPath, writePool, foldJudgments, isModelAssessor } = await import('../label/formats.js');
  const judgments = readJudgments(judgmentsLogPath(flags.labels)).judgments;
  const extra: string[] = [];

  // Kendall's tau between the configurations' orders under persons' labels and persons' + the model's.
  let decision: Awaited<ReturnType<typeof decisionCheck>> = null;
  if (dataset !== undefined) decision = await decisionCheck(header, dataset, judgments, summary.assessor);
  if (decision !== null) {
    const d = decision.agreement;
    const f = (t: { id: string; mean: number } | null) => (t === null ? 'none' : `${t.id} (${t.mean.toFixed(4)})`);
    extra.push(
      `decision: ${d.measure} of ${d.configurations} configurations re-scored with ${decision.modelAdded} model labels added: Kendall's tau ${Number.isNaN(d.tau) ? 'NaN' : d.tau.toFixed(3)}; top under persons' labels ${f(d.topA)}, under persons' + model's ${f(d.topB)}`,
    );
    if (!(d.tau >= judge.TAU_WARN) || d.topA?.id !== d.topB?.id) {
      extra.push(`WARNING: ${!(d.tau >= judge.TAU_WARN) ? `tau below ${judge.TAU_WARN}` : 'the top configuration changes'}: ${judge.LOW_AGREEMENT}`);
    }
  } else {
    extra.push(`decision: not checked (needs the pool's results folder with per-query.jsonl, the dataset, and level document)`);
  }

  // --calibrate N: a pool of N pairs, stratified by the model's grade, for a person to label first.
  let calibrationPool: { file: string; pairs: number } | null = null;
  if (calibrateN !== undefined) {
    const folded = foldJudgments(judgments);
    const model = new Map<string, number>();
    const persons = new Set<string>();
    for (const [k, by] of folded) {
      const g = by.get(summary.assessor)?.grade;
      if (g !== undefined) model.set(k, g);
      for (const [a, st] of by) if (!isModelAssessor(a) && st.grade !== undefined) persons.add(k);
    }
    if (summary.calibration.n >= calibrateN) {
      extra.push(`--calibrate ${calibrateN}: ${summary.calibration.n} pairs already have a person's grade; no sample written`);
    } else {
      const { seededRandom } = await import('../score/stats.js');
      const sample = judge.calibrationSample(pairs, model, persons, { n: calibrateN - summary.calibration.n }, seededRandom(42));
      const file = poolFile.replace(/(\.jsonl)?$/, '.calibrate.jsonl');
      writePool(file, { ...header, pairs: sample.length }, sample);
      calibrationPool = { file, pairs: sample.length };
      extra.push(
        `--calibrate ${calibrateN}: ${sample.length} pairs stratified by the model's grade written to ${file}; label them with ` +
          `retrieval-sweep label ${file} --labels ${flags.labels} --assessor <you>, then run this judge command again (cached: no request) for the agreement`,
      );
    }
  }
  if (flags.json) {
    io.stdout(`${JSON.stringify({ ...summary, decision, calibrationPool, prompt: prompt.source }, null, 2)}\n`);
  } else {
    io.stdout(formatJudgeSummary(summary, flags.labels, poolFile) + extra.map((l) => `${l}\n`).join(''));
  }
}

/** Re-scores the pool's results folder (per-query.jsonl) under persons' labels and persons' + the model's. */
async function decisionCheck(
  header: import('../label/formats.js').PoolHeader,
  dataset: import('../types.js').Dataset,
  judgments: readonly import('../label/formats.js').Judgment[],
  assessor: string,
): Promise<{ agreement: import('../score/rank-agreement.js').OrderAgreement; modelAdded: number } | null> {
  const perQuery = path.join(header.results, 'per-query.jsonl');
  if (header.level !== 'document' || !existsSync(perQuery)) return null;
  const [{ forEachLine }, { orderAgreement }, { parseMeasure }, { decisionQrels }, { readFileSync }] = await Promise.all([
    import('../load/lines.js'),
    import('../score/rank-agreement.js'),
    import('../score/measures.js'),
    import('../label/judge.js'),
    import('node:fs'),
  ]);
  let metric = 'ndcg@10';
  try {
    const m = JSON.parse(readFileSync(path.join(header.results, 'manifest.json'), 'utf8')) as { primaryMetric?: unknown };
    if (typeof m.primaryMetric === 'string') metric = m.primaryMetric;
  } catch {
    // no manifest: the default measure
  }
  const rankings = new Map<string, Map<string, string[]>>();
  await forEachLine(perQuery, (line) => {
    if (line.trim() === '') return;
    const o = JSON.parse(line) as { config_id?: unknown; qid?: unknown; ranked_docs?: unknown };
    if (typeof o.config_id !== 'string' || typeof o.qid !== 'string' || !Array.isArray(o.ranked_docs)) return;
    let m = rankings.get(o.config_id);
    if (m === undefined) rankings.set(o.config_id, (m = new Map()));
    m.set(o.qid, o.ranked_docs.map(String));
  });
  const q = decisionQrels(dataset, judgments, assessor);
  return {
    agreement: orderAgreement(rankings, q.human, q.withModel, parseMeasure(metric), { relevanceThreshold: header.threshold }),
    modelAdded: q.modelAdded,
  };
}

interface GenerateFlags extends ChatCliFlags {
  out?: string;
  questions: string;
  perDocument: string;
  seed: string;
  chunkSize: string;
  styles?: string;
  prompt?: string;
  split?: string;
  dropOverlap?: boolean;
  checkWithJudge?: boolean;
  judgePrompt?: string;
}

async function generateCommand(datasetDir: string, flags: GenerateFlags, io: Io): Promise<void> {
  if (flags.out === undefined || flags.out.trim() === '') {
    throw new HarnessError('USAGE', '--out is required', { remedy: 'pass the questions.jsonl to append to, e.g. --out datasets/mine/questions.jsonl' });
  }
  const questions = positiveInt('--questions', flags.questions, 1) as number;
  const perDocument = positiveInt('--per-document', flags.perDocument, 1) as number;
  if (!/^-?\d+$/.test(flags.seed)) throw new HarnessError('USAGE', `--seed must be a whole number (got ${flags.seed})`, { remedy: 'pass e.g. --seed 42' });
  const chunkSize = flags.chunkSize === 'none' ? null : (positiveInt('--chunk-size', flags.chunkSize, 1) as number);
  const styles = flags.styles !== undefined ? flags.styles.split(',').map((s) => s.trim()).filter((s) => s !== '') : undefined;
  const opts = await chatOptions(flags);
  const [{ runGenerate, formatGenerateSummary }, { ChatClient }, { ChatCache }, prompts, { loadDataset }] = await Promise.all([
    import('../label/generate.js'),
    import('../llm/chat.js'),
    import('../llm/cache.js'),
    import('../llm/prompts.js'),
    import('../load/dataset.js'),
  ]);
  const prompt = prompts.loadPrompt(flags.prompt, prompts.DEFAULT_GENERATION_PROMPT, prompts.GENERATION_PLACEHOLDERS);
  const judgePrompt =
    flags.checkWithJudge || flags.judgePrompt !== undefined ? prompts.loadPrompt(flags.judgePrompt, prompts.DEFAULT_JUDGE_PROMPT, prompts.JUDGE_PLACEHOLDERS) : undefined;
  const client = new ChatClient(opts);
  const dataset = await loadDataset({ path: path.resolve(datasetDir), ...(flags.split ? { split: flags.split } : {}), labels: 'keep', strictness: 'warn' });
  const cache = ChatCache.open(path.join(flags.cacheDir, 'chat.sqlite'));
  try {
    const summary = await runGenerate({
      dataset,
      outFile: flags.out,
      client,
      cache,
      prompt,
      questions,
      perDocument,
      seed: Number(flags.seed),
      chunkSize,
      ...(styles ? { styles } : {}),
      dropOverlap: Boolean(flags.dropOverlap),
      ...(judgePrompt ? { checkWithJudge: judgePrompt } : {}),
    });
    if (flags.json) io.stdout(`${JSON.stringify({ ...summary, prompt: prompt.source, cache: cache.file }, null, 2)}\n`);
    else io.stdout(formatGenerateSummary(summary));
  } finally {
    cache.close();
  }
}

/** Adds `judge` and `generate` to `program`. */
export function registerLlmCommands(program: Command, io: Io): void {
  addChatFlags(
    program
      .command('judge')
      .description("grade a pool's pairs 0-3 with a chat model into the labels file's judgments log; agreement with people")
      .argument('<pool>', 'pool file written by `pool`')
      .option('--labels <file>', 'labels file; the grades go to <file>.judgments.jsonl beside it')
      .option('--prompt <file>', 'own judge prompt with the placeholders {question} and {passage}')
      .option('--dataset <dir>', "dataset whose labels calibrate the model (default: the pool's dataset when present)")
      .option('--calibrate <n>', "write a pool of N pairs stratified by the model's grade for a person to label first (when fewer have a person's grade)"),
  ).action(async (pool: string, flags: JudgeFlags) => judgeCommand(pool, flags, io));

  addChatFlags(
    program
      .command('generate')
      .description('write questions a user would type, each with its passage as evidence, tagged synthetic')
      .argument('<dataset>', 'dataset folder (docs/ + questions.jsonl, or BEIR)')
      .option('--out <file>', 'questions.jsonl to append to (existing lines are kept as they are)')
      .option('--questions <n>', 'questions wanted', '20')
      .option('--per-document <m>', 'questions asked per passage (one passage per document)', '1')
      .option('--seed <s>', 'seed of the document order and passage draw', '42')
      .option('--chunk-size <t>', 'passage size in tokens, or none for whole documents', '256')
      .option('--styles <list>', 'prompt styles, comma-separated: plain, keyword, paraphrase (several: a style tag each)')
      .option('--prompt <file>', 'own generation prompt with the placeholders {passage} and {count} ({style} optional)')
      .option('--split <name>', 'BEIR split (default test)')
      .option('--drop-overlap', 'drop questions that copy long runs of the passage instead of tagging them high-overlap')
      .option('--check-with-judge', 'grade each question against its passage with the judge prompt; drop grades below 2')
      .option('--judge-prompt <file>', 'own judge prompt for --check-with-judge ({question}, {passage}); implies it'),
  ).action(async (dataset: string, flags: GenerateFlags) => generateCommand(dataset, flags, io));
}
