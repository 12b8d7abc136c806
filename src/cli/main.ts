/**
 * The command line: argument parsing and the one place that calls process.exit.
 * Exit 0 on success, 1 for the user's mistakes (HarnessError: bad config, data, labels, files), 2 for our bugs.
 * Data goes to stdout; progress and diagnostics go to stderr.
 */
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import cliProgress from 'cli-progress';
import { loadConfigFile } from '../config/schema.js';
import { runSweep, type SweepEvent } from '../run/sweep.js';
import { writeArtifacts, loadSweepResult, checkOutputDir, checkOutputOutsideDataset } from '../run/artifacts.js';
import { acquireOutputLock } from '../run/lock.js';
import { analyze, withStatistics } from '../report/analyze.js';
import { renderReports } from '../report/render.js';
import { compareSweeps } from '../report/compare.js';
import { runEvaluateCommand } from './evaluate.js';
import { registerSchemaCommand } from './schema.js';
import { HarnessError, isHarnessError } from '../errors.js';

/** Draws progress on stderr: a bar per stage on a terminal, a line per stage otherwise. */
function progressReporter(quiet: boolean): { onEvent: (e: SweepEvent) => void; stop: () => void } {
  const tty = Boolean(process.stderr.isTTY);
  let bar: cliProgress.SingleBar | undefined;
  let current = '';
  let lastLine = 0;
  let started = 0;
  const stop = () => {
    bar?.stop();
    bar = undefined;
  };
  const onEvent = (e: SweepEvent) => {
    if (e.kind === 'warning') {
      stop();
      current = '';
      process.stderr.write(`warning: ${e.message}\n`);
      return;
    }
    if (quiet) return;
    if (e.kind === 'stage') {
      stop();
      current = '';
      process.stderr.write(`${e.stage}${e.detail ? `: ${e.detail}` : ''}\n`);
      return;
    }
    if (e.stage !== current) {
      stop();
      current = e.stage;
      if (tty) {
        bar = new cliProgress.SingleBar(
          { format: `${e.stage.padEnd(22)} [{bar}] {value}/{total} {duration_formatted}`, stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(e.total, e.done);
      } else {
        process.stderr.write(`${e.stage}: ${e.total} to do\n`);
        lastLine = started = Date.now();
      }
    }
    bar?.update(e.done);
    // Without a terminal, a line every 10 seconds and one at the end instead of a bar.
    if (!tty && (Date.now() - lastLine >= 10_000 || e.done >= e.total)) {
      lastLine = Date.now();
      process.stderr.write(`${e.stage}: ${e.done}/${e.total} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    }
    if (e.done >= e.total) {
      stop();
    }
  };
  return { onEvent, stop };
}

async function runCommand(configPath: string, opts: { out?: string; quiet?: boolean }): Promise<void> {
  const config = loadConfigFile(configPath);
  if (opts.out !== undefined && opts.out.trim() === '')
    throw new HarnessError('USAGE', '--out is empty', { remedy: 'pass a folder path, or leave --out out to write results/<name>' });
  const outDir = path.resolve(opts.out ?? path.join('results', config.name));
  checkOutputOutsideDataset(config, outDir);
  const releaseOut = acquireOutputLock(outDir); // also released on process exit (kill -9 leaves a stale lock, taken over)
  checkOutputDir(outDir);
  const progress = progressReporter(Boolean(opts.quiet));
  let swept;
  try {
    swept = await runSweep(config, { onEvent: progress.onEvent });
  } finally {
    progress.stop();
  }
  const analysis = analyze(swept.result, {
    seed: config.statistics.seed,
    resamples: config.statistics.resamples,
    alpha: config.statistics.alpha,
  });
  const result = withStatistics(swept.result, analysis);
  const rendered = renderReports(result, analysis);
  writeArtifacts(outDir, result, rendered as unknown as Record<string, string>);
  releaseOut();
  process.stdout.write(rendered.terminal.endsWith('\n') ? rendered.terminal : `${rendered.terminal}\n`);
  const t = swept.timings;
  process.stderr.write(
    `times: load ${t.load_seconds.toFixed(1)} s, chunk ${t.chunk_seconds.toFixed(1)} s, keyword ${t.keyword_seconds.toFixed(1)} s, ` +
      `embed+semantic ${t.dense_seconds.toFixed(1)} s (inference ${t.embed_seconds.toFixed(1)} s), score ${t.score_seconds.toFixed(1)} s, ` +
      `total ${t.total_seconds.toFixed(1)} s\n`,
  );
  process.stderr.write(`results: ${outDir}\n`);
}

/** Builds the program (exported for tests). */
export function buildProgram(): Command {
  const program = new Command();
  program
    .name('retrieval-sweep')
    .description('Sweep retrieval settings over labelled questions and report trec_eval-exact metrics.')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('run')
    .description('run the grid of a YAML config and write the results folder')
    .argument('[config]', 'YAML config file', 'configs/default.yaml')
    .option('-o, --out <dir>', 'results folder (default: results/<name>)')
    .option('-q, --quiet', 'no progress output')
    .action(async (config: string, opts: { out?: string; quiet?: boolean }) => runCommand(config, opts));

  program
    .command('evaluate')
    .description('score a TREC run file against TREC qrels (trec_eval -c conventions)')
    .argument('<qrels>', 'qrels file: qid 0 docno grade')
    .argument('<run>', 'run file: qid Q0 docno rank score tag')
    .option('-m, --measure <name...>', 'measures such as ndcg@10 recall@5 r_precision (default: a standard set)')
    .option('--per-query', 'add a row per question')
    .option('--json', 'print JSON {"mean", "per_query", "excluded"}')
    .option('--threshold <grade>', 'grades at or above this count as relevant', '1')
    .action((qrels: string, run: string, opts: { measure?: string[]; perQuery?: boolean; json?: boolean; threshold: string }) => {
      const threshold = Number(opts.threshold);
      if (!Number.isInteger(threshold) || threshold < 1)
        throw new HarnessError('USAGE', `--threshold must be a whole number ≥ 1 (got ${opts.threshold})`, {
          remedy: 'pass e.g. --threshold 2 to count only grades 2 and up as relevant',
        });
      const out = runEvaluateCommand({
        qrels,
        run,
        ...(opts.measure ? { measures: opts.measure } : {}),
        perQuery: Boolean(opts.perQuery),
        json: Boolean(opts.json),
        relevanceThreshold: threshold,
      });
      if (out.stderr) process.stderr.write(out.stderr.endsWith('\n') ? out.stderr : `${out.stderr}\n`);
      process.stdout.write(out.stdout.endsWith('\n') ? out.stdout : `${out.stdout}\n`);
    });

  program
    .command('compare')
    .description('paired comparison of two finished sweeps on the same questions')
    .argument('<a>', 'results folder A')
    .argument('<b>', 'results folder B')
    .option('--json', 'print JSON')
    .option('--seed <n>', 'random seed for the bootstrap and permutation test', '42')
    .action((a: string, b: string, opts: { json?: boolean; seed: string }) => {
      if (!/^-?\d+$/.test(opts.seed))
        throw new HarnessError('USAGE', `--seed must be a whole number (got ${opts.seed})`, { remedy: 'pass e.g. --seed 42' });
      const ra = loadSweepResult(a);
      const rb = loadSweepResult(b);
      if (ra.level !== rb.level)
        throw new HarnessError('USAGE', `${a} is scored at level ${ra.level} and ${b} at level ${rb.level}: their measures differ`, {
          remedy: 'compare two sweeps scored at the same level',
        });
      const out = compareSweeps(ra, rb, { seed: Number(opts.seed) });
      process.stdout.write(opts.json ? `${JSON.stringify(out.json, null, 2)}\n` : out.text.endsWith('\n') ? out.text : `${out.text}\n`);
    });
  registerSchemaCommand(program);
  return program;
}

/** Parses argv, runs the command, exits with 0, 1 (user error) or 2 (bug). */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
    process.exitCode = 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exit(e.exitCode === 0 ? 0 : 1);
    }
    if (isHarnessError(e)) {
      process.stderr.write(`error: ${e.format()}\n`);
      process.exit(1);
    }
    process.stderr.write(`internal error (a bug in retrieval-sweep; please report it):\n${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(2);
  }
}

