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
  prompt?: string;
  dataset?: string;
}

async function judgeCommand(poolFile: string, flags: JudgeFlags, io: Io): Promise<void> {
  if (flags.labels === undefined || flags.labels.trim() === '') {
    throw new HarnessError('USAGE', '--labels is required', {
      remedy: 'pass the labels file whose judgments log receives the grades, e.g. --labels datasets/mine/questions.jsonl',
    });
  }
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
  const dsRoot = flags.dataset ?? header.dataset.root;
  if (flags.dataset !== undefined || existsSync(dsRoot)) {
    const { loadDataset } = await import('../load/dataset.js');
    const ds = await loadDataset({ path: path.resolve(dsRoot), labels: 'keep', strictness: 'warn' });
    grades = datasetGrades(ds, header, pairs);
  } else {
    io.stderr(`note: the pool's dataset ${dsRoot} is not there; calibration uses the judgments log only (pass --dataset DIR)\n`);
  }
  const cache = ChatCache.open(path.join(flags.cacheDir, 'chat.sqlite'));
  try {
    const summary = await runJudge({ header, pairs, labelsFile: flags.labels, client, cache, prompt, ...(grades ? { datasetGrades: grades } : {}) });
    for (const w of summary.warnings) io.stderr(`warning: ${w}\n`);
    if (flags.json) io.stdout(`${JSON.stringify({ ...summary, prompt: prompt.source, cache: cache.file }, null, 2)}\n`);
    else io.stdout(formatJudgeSummary(summary, flags.labels, poolFile));
  } finally {
    cache.close();
  }
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
      .option('--dataset <dir>', "dataset whose labels calibrate the model (default: the pool's dataset when present)"),
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
      .option('--drop-overlap', 'drop questions that copy long runs of the passage instead of tagging them high-overlap'),
  ).action(async (dataset: string, flags: GenerateFlags) => generateCommand(dataset, flags, io));
}
