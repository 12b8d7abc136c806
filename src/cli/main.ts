/**
 * The command line: argument parsing and the one place that decides the exit code (see {@link EXIT}).
 * Data goes to stdout; progress and diagnostics go to stderr.
 *
 * Start-up: only commander is imported up front. Each command imports what it needs when it runs, so `--help`,
 * `--version` and usage errors never load the sweep, the models or SQLite.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { HarnessError, isHarnessError } from '../errors.js';
import { resourceError } from '../store/resource.js';
import type { SweepOptions } from '../run/sweep.js';
import { registerLlmCommands } from './llm.js';
import { maxOf } from '../bounded.js';

/**
 * Exit codes (the README's table):
 * - 0 success (`validate`: the config, dataset and questions are fine; `recheck`: every value agrees);
 * - 1 the user's input is wrong (a HarnessError: bad config, dataset, labels, files), or `recheck` found values that
 *   disagree; the message names the file, line or key and the remedy;
 * - 2 usage: an unknown command or option, a missing or extra argument, a bad option value; the usage line follows;
 * - 70 an internal error, i.e. a bug in retrieval-sweep (EX_SOFTWARE of sysexits.h); the stack is printed with a
 *   request to report it;
 * - 130 interrupted by Ctrl-C (128 + SIGINT), as shells do.
 */
export const EXIT = { ok: 0, input: 1, usage: 2, internal: 70, interrupted: 130 } as const;

/** The package version, read from the package.json beside src/ or dist/. */
export function packageVersion(): string {
  const pj = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pj.version;
}

/** Thrown by `run` after Ctrl-C once the message is printed; maps to exit 130. */
class Interrupted extends Error {}

/** Where the caller writes (tests capture them). */
export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

const processIo: CliIo = {
  stdout: (s) => void process.stdout.write(s),
  stderr: (s) => void process.stderr.write(s),
};

const nl = (s: string) => (s.endsWith('\n') ? s : `${s}\n`);

/** `retrieval-sweep run`: the words that call a command. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** `usage: retrieval-sweep run [options] [config]` and where to read more. */
function usageLine(cmd: Command): string {
  return `usage: ${commandPath(cmd)} ${cmd.usage()}\n(see ${commandPath(cmd)} --help)`;
}

/** The interrupted message: what was kept, and how to resume. */
export function interruptedMessage(configPath: string, outDir: string, cacheDir: string): string {
  return (
    `\ninterrupted: the sweep stopped before writing results; ${outDir} was not touched (earlier results there are intact).\n` +
    `  embeddings computed so far are kept in ${path.join(cacheDir, 'embeddings.sqlite')};\n` +
    `  to resume, run the same command again (cached texts are not embedded again):\n` +
    `  retrieval-sweep run ${configPath} --out ${outDir}\n`
  );
}

interface RunOptions {
  out?: string;
  quiet?: boolean;
  json?: boolean;
  failOn?: string;
  only?: string;
}

/** The conditions `run --fail-on` knows: a row failed; the questions cannot tell the candidates apart. */
export const RUN_FAIL_ON = ['failed-rows', 'no-evidence'] as const;

/** Parses `--fail-on a,b` of `run` (each in {@link RUN_FAIL_ON}). @throws HarnessError `USAGE` naming an unknown one. */
function parseRunFailOn(v: string | undefined): Set<(typeof RUN_FAIL_ON)[number]> {
  const out = new Set<(typeof RUN_FAIL_ON)[number]>();
  if (v === undefined) return out;
  for (const f of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(RUN_FAIL_ON as readonly string[]).includes(f))
      throw new HarnessError('USAGE', `--fail-on ${f}: run knows ${RUN_FAIL_ON.join(', ')}`, { remedy: 'pass e.g. --fail-on failed-rows,no-evidence' });
    out.add(f as (typeof RUN_FAIL_ON)[number]);
  }
  if (out.size === 0) throw new HarnessError('USAGE', '--fail-on is empty', { remedy: `pass one or more of ${RUN_FAIL_ON.join(', ')}, comma-separated` });
  return out;
}

/** `run`: {@link runLocked}, then the --out lock released however it ended (a failure too, not only at process exit). */
async function runCommand(configPath: string, opts: RunOptions, io: CliIo): Promise<void> {
  const held: { release?: () => void } = {};
  try {
    await runLocked(configPath, opts, io, held);
  } finally {
    held.release?.();
  }
}

async function runLocked(configPath: string, opts: RunOptions, io: CliIo, held: { release?: () => void }): Promise<void> {
  const { loadConfigFile } = await import('../config/schema.js');
  const failOn = parseRunFailOn(opts.failOn);
  const config = loadConfigFile(configPath);
  if (opts.out !== undefined && opts.out.trim() === '')
    throw new HarnessError('USAGE', '--out is empty', { remedy: 'pass a folder path, or leave --out out to write results/<name>' });
  const [{ runSweep }, artifacts, { analyze, withStatistics }, { renderReports }, { createProgress }] = await Promise.all([
    import('../run/sweep.js'),
    import('../run/artifacts.js'),
    import('../report/analyze.js'),
    import('../report/render.js'),
    import('./progress.js'),
  ]);
  const outDir = path.resolve(opts.out ?? path.join('results', config.name));
  artifacts.checkOutputOutsideDataset(config, outDir);
  const { acquireOutputLock } = await import('../run/lock.js');
  const releaseOut = acquireOutputLock(outDir); // also released on process exit (kill -9 leaves a stale lock, taken over)
  held.release = releaseOut;
  artifacts.checkOutputDir(outDir);
  const startup = performance.now() / 1000;
  const progress = createProgress({ quiet: Boolean(opts.quiet) });
  const controller = new AbortController();
  let interrupted = false;
  const onSigint = () => {
    if (interrupted) process.exit(EXIT.interrupted); // a second Ctrl-C: stop now
    interrupted = true;
    progress.stop();
    io.stderr(interruptedMessage(configPath, outDir, path.resolve(config.cacheDir)));
    controller.abort();
    process.exitCode = EXIT.interrupted;
    // The sweep stops at its next check of the signal; if it does not within 3 s, leave anyway (the cache's
    // transactions are atomic, and nothing of the results folder has been written).
    setTimeout(() => process.exit(EXIT.interrupted), 3000).unref();
  };
  process.on('SIGINT', onSigint);
  const sweepOptions: SweepOptions & { signal: AbortSignal } = {
    onEvent: progress.onEvent,
    signal: controller.signal,
    ...(opts.only !== undefined ? { only: opts.only } : {}),
  };
  let swept;
  try {
    swept = await runSweep(config, sweepOptions);
  } catch (e) {
    process.off('SIGINT', onSigint);
    if (interrupted) throw new Interrupted();
    throw e;
  } finally {
    progress.stop();
  }
  if (interrupted) {
    process.off('SIGINT', onSigint);
    throw new Interrupted();
  }
  const tReport = performance.now();
  const analysis = analyze(swept.result, {
    seed: config.statistics.seed,
    resamples: config.statistics.resamples,
    alpha: config.statistics.alpha,
    minQuestions: config.statistics.minQuestions,
    maxResamples: config.statistics.maxResamples,
  });
  const result = withStatistics(swept.result, analysis);
  const rendered = renderReports(result, analysis);
  // From here on Ctrl-C has the default effect: the results folder is written atomically (temp folder + rename).
  process.off('SIGINT', onSigint);
  if (interrupted) throw new Interrupted();
  const written = artifacts.writeArtifacts(outDir, result, rendered as unknown as Record<string, string>);
  releaseOut();
  const reportSeconds = (performance.now() - tReport) / 1000;
  const totalSeconds = performance.now() / 1000;
  const t = swept.timings;
  const times = {
    ...t,
    startup_seconds: startup,
    report_seconds: reportSeconds,
    sweep_seconds: t.total_seconds,
    total_seconds: totalSeconds,
  };
  if (opts.json) {
    const { selectionJson } = await import('../report/matrix.js');
    const best = analysis.best;
    const row = best ? result.configs[best.index] : undefined;
    const enough = analysis.evidence.enough;
    const summary = {
      name: result.name,
      primaryMetric: analysis.primaryMetric,
      // null whenever the report says "Not enough evidence to choose": `highest` keeps the top row for reading.
      recommendation:
        best && enough ? { id: best.id, mean: best.mean, low: best.low, high: best.high, config: row?.config ?? null } : null,
      enoughEvidence: enough,
      enoughEvidenceReason: analysis.evidence.reason,
      highest: best ? { id: best.id, mean: best.mean, low: best.low, high: best.high } : null,
      tier1: analysis.tier1,
      undecided: analysis.undecided,
      selection: selectionJson(analysis),
      chooseK: analysis.kCurves.map((c) => ({ configId: c.configId, maxK: c.maxK, smallestTiedK: c.smallestTiedK, sentence: c.sentence })),
      questions: analysis.questions,
      configurations: result.configs.length,
      failed: analysis.failed,
      warnings: analysis.warnings,
      outDir,
      files: written,
      timings: times,
    };
    io.stdout(`${JSON.stringify(summary, null, 2)}\n`);
  } else {
    io.stdout(nl(rendered.terminal));
  }
  io.stderr(
    `times: start-up ${startup.toFixed(1)} s, load ${t.load_seconds.toFixed(1)} s, chunk ${t.chunk_seconds.toFixed(1)} s, keyword ${t.keyword_seconds.toFixed(1)} s, ` +
      `embed+semantic ${t.dense_seconds.toFixed(1)} s (inference ${t.embed_seconds.toFixed(1)} s), ` +
      `retrievers+runs ${(t.external_seconds ?? 0).toFixed(1)} s, rerank ${(t.rerank_seconds ?? 0).toFixed(1)} s, score ${t.score_seconds.toFixed(1)} s, ` +
      `report ${reportSeconds.toFixed(1)} s, total ${totalSeconds.toFixed(1)} s\n`,
  );
  io.stderr(`results: ${outDir}\n`);
  // --fail-on: after the results are written, so a CI job can still read and upload them.
  const fails: string[] = [];
  if (failOn.has('failed-rows') && analysis.failed.length > 0)
    fails.push(`${analysis.failed.length} configuration(s) failed: ${analysis.failed.slice(0, 5).map((f) => f.id).join(', ')}${analysis.failed.length > 5 ? ', …' : ''}`);
  if (failOn.has('no-evidence') && !analysis.evidence.enough) fails.push(`not enough evidence to choose: ${analysis.evidence.reason ?? 'no reason given'}`);
  if (fails.length > 0) {
    io.stderr(`--fail-on: ${fails.join('; ')}\n`);
    process.exitCode = EXIT.input;
  }
}

async function validateCommand(configPath: string, opts: { json?: boolean }, io: CliIo): Promise<void> {
  const { loadConfigFile } = await import('../config/schema.js');
  const { planSweep, formatPlan } = await import('../run/plan.js');
  const config = loadConfigFile(configPath);
  const plan = await planSweep(config);
  io.stdout(opts.json ? `${JSON.stringify(plan, null, 2)}\n` : formatPlan(plan));
}

/** What each path of `run` and `validate` is relative to, and where the cache is (their `--help`). */
const PATHS_HELP = `
Paths:
  CONFIG and --out are relative to the working directory; --out defaults to results/<name> there.
  Inside the config, dataset.path, cacheDir, retrievers[].module and runs[].path are relative to the config file.
  The cache (embeddings, the GloVe table, checkpoints, models) is cacheDir when the config sets it, else
  $RETRIEVAL_SWEEP_CACHE (relative to the working directory), else $XDG_CACHE_HOME/retrieval-sweep, else
  ~/.cache/retrieval-sweep: one folder shared by every project and working directory.
`;

/** Builds the program (exported for tests). Every command writes through `io`. */
export function buildProgram(io: CliIo = processIo): Command {
  const program = new Command();
  program
    .name('retrieval-sweep')
    .description('Sweep retrieval settings over labelled questions and report trec_eval-exact metrics.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) });

  program
    .command('run')
    .description('run the grid of a YAML config and write the results folder')
    .argument('[config]', "YAML config file, relative to the working directory; the paths inside it (dataset.path, cacheDir, retrievers' module, runs' path) are relative to the config file", 'configs/default.yaml')
    .option('-o, --out <dir>', 'results folder, relative to the working directory (default: results/<name> under the working directory)')
    .option('-q, --quiet', 'no progress output')
    .option('--json', 'print the summary (recommendation, enoughEvidence, tier 1, files written, timings) as one JSON object')
    .option('--fail-on <conditions>', `exit 1 after writing the results when any holds: ${RUN_FAIL_ON.join(', ')} (comma-separated)`)
    .option('--only <glob>', "run only the rows whose id matches the glob ('*.keyword.*') or whose unit kind it names (keyword, dense, fusion, external, run, rerank), and only the units they need; the results folder is marked partial")
    .addHelpText('after', PATHS_HELP)
    .action(async (config: string, opts: RunOptions) => runCommand(config, opts, io));

  program
    .command('validate')
    .description('check the config, dataset and questions without running anything; print what the sweep would do')
    .argument('[config]', 'YAML config file', 'configs/default.yaml')
    .option('--json', 'print the plan as JSON')
    .addHelpText('after', PATHS_HELP)
    .action(async (config: string, opts: { json?: boolean }) => validateCommand(config, opts, io));

  program
    .command('evaluate')
    .description('score a TREC run file against TREC qrels (trec_eval -c conventions)')
    .argument('<qrels>', 'qrels file: qid 0 docno grade')
    .argument('<run>', 'run file: qid Q0 docno rank score tag')
    .option('-m, --measure <name...>', 'measures such as ndcg@10 recall@5 r_precision recip_rank bpref judged@10 ndcg_condensed@10 (default: a standard set)')
    .option('--per-query', 'add a row per question')
    .option('--json', 'print JSON {"mean", "per_query", "excluded"}')
    .option('--threshold <grade>', 'grades at or above this count as relevant', '1')
    .option('-J, --condensed', 'also score every measure on condensed lists, unjudged documents removed (trec_eval -J): <measure>_condensed')
    .action(async (qrels: string, run: string, opts: { measure?: string[]; perQuery?: boolean; json?: boolean; threshold: string; condensed?: boolean }) => {
      const threshold = Number(opts.threshold);
      if (!Number.isInteger(threshold) || threshold < 1)
        throw new HarnessError('USAGE', `--threshold must be a whole number ≥ 1 (got ${opts.threshold})`, {
          remedy: 'pass e.g. --threshold 2 to count only grades 2 and up as relevant',
        });
      const { runEvaluateCommand } = await import('./evaluate.js');
      const out = runEvaluateCommand({
        qrels,
        run,
        ...(opts.measure ? { measures: opts.measure } : {}),
        perQuery: Boolean(opts.perQuery),
        json: Boolean(opts.json),
        relevanceThreshold: threshold,
        condensed: Boolean(opts.condensed),
      });
      if (out.stderr) io.stderr(nl(out.stderr));
      io.stdout(nl(out.stdout));
    });

  program
    .command('compare')
    .description('paired comparison of finished sweeps with a baseline (the first folder), on one metric; a CI gate with --fail-on regression')
    .argument('<base>', 'results folder of the baseline (relative to the working directory)')
    .argument('<runs...>', 'one or more results folders compared with the baseline')
    .option('--metric <name>', "metric compared (default: the baseline's primary metric, i.e. its rows at that k); a bare family such as ndcg compares each row at its own k")
    .option('--rows <ids>', "rows compared: shared (default: every id both have at the metric's k), recommended (the baseline's recommended row), or comma-separated ids")
    .option('--format <format>', 'text (default), markdown (a pull-request comment) or json')
    .option('--json', 'print JSON (same as --format json)')
    .option('--fail-on <what>', 'exit 1 when the condition holds: regression (a row significantly worse by more than --margin)')
    .option('--margin <x>', "regression margin in the metric's units (0.01 = one point)", '0')
    .option('--seed <n>', 'random seed for the bootstrap and permutation test', '42')
    .action(
      async (
        base: string,
        runs: string[],
        opts: { json?: boolean; seed: string; metric?: string; rows?: string; format?: string; failOn?: string; margin: string },
      ) => {
        if (!/^-?\d+$/.test(opts.seed))
          throw new HarnessError('USAGE', `--seed must be a whole number (got ${opts.seed})`, { remedy: 'pass e.g. --seed 42' });
        const format = opts.json ? 'json' : (opts.format ?? 'text');
        if (format !== 'text' && format !== 'markdown' && format !== 'json')
          throw new HarnessError('USAGE', `--format must be text, markdown or json (got ${opts.format})`, { remedy: 'pass e.g. --format markdown' });
        if (opts.json && opts.format !== undefined && opts.format !== 'json')
          throw new HarnessError('USAGE', `--json and --format ${opts.format} disagree`, { remedy: 'pass one of them' });
        const margin = Number(opts.margin);
        if (opts.margin.trim() === '' || !Number.isFinite(margin) || margin < 0)
          throw new HarnessError('USAGE', `--margin must be a number ≥ 0 in the metric's units (got ${opts.margin})`, { remedy: 'pass e.g. --margin 0.01' });
        const failOn = opts.failOn === undefined ? [] : opts.failOn.split(',').map((s) => s.trim()).filter(Boolean);
        for (const f of failOn)
          if (f !== 'regression')
            throw new HarnessError('USAGE', `--fail-on ${f}: compare knows only regression`, { remedy: 'pass --fail-on regression (with --margin)' });
        const rows =
          opts.rows === undefined || opts.rows.trim() === 'shared'
            ? ('shared' as const)
            : opts.rows.trim() === 'recommended'
              ? ('recommended' as const)
              : opts.rows.split(',').map((s) => s.trim()).filter(Boolean);
        if (Array.isArray(rows) && rows.length === 0)
          throw new HarnessError('USAGE', '--rows is empty', { remedy: 'pass shared, recommended, or comma-separated configuration ids' });
        const { loadSweepResult } = await import('../run/artifacts.js');
        const { compareRuns, formatComparisonText, formatComparisonMarkdown } = await import('../report/compare.js');
        const ra = loadSweepResult(base);
        const others = runs.map((r) => ({ dir: r, result: loadSweepResult(r) }));
        for (const o of others)
          if (ra.level !== o.result.level)
            throw new HarnessError('USAGE', `${base} is scored at level ${ra.level} and ${o.dir} at level ${o.result.level}: their measures differ`, {
              remedy: 'compare sweeps scored at the same level',
            });
        const out = compareRuns(
          ra,
          others.map((o) => o.result),
          { seed: Number(opts.seed), margin, rows, ...(opts.metric !== undefined ? { metric: opts.metric } : {}) },
        );
        // JSON: one run gives the comparison itself (the keys `compare A B --json` always had); several give
        // {baseline, comparisons, tests, regressions}.
        const json = out.comparisons.length === 1 ? out.comparisons[0] : out;
        io.stdout(
          format === 'json'
            ? `${JSON.stringify(json, null, 2)}\n`
            : format === 'markdown'
              ? nl(formatComparisonMarkdown(out))
              : nl(formatComparisonText(out)),
        );
        if (failOn.includes('regression') && out.regressions.length > 0) {
          io.stderr(
            `regression: ${out.regressions.length} row(s) significantly worse than the baseline by more than ${margin}: ` +
              out.regressions.map((r) => `${r.configId} ${r.metric} ${r.diff.toFixed(4)} (Holm p ${r.pHolm.toPrecision(2)}) in ${others[r.runIndex].dir}`).join('; ') +
              '\n',
          );
          process.exitCode = EXIT.input;
        }
      },
    );

  program
    .command('recheck')
    .description("re-score a results folder's runs/*.trec with the evaluator and compare every value with matrix.json")
    .argument('<dir>', 'results folder written by run')
    .option('--json', 'print JSON {"configurations", "values", "maxDiff", "disagreements"}')
    .action(async (dir: string, opts: { json?: boolean }) => {
      const { recheckResults, formatRecheck } = await import('../run/recheck.js');
      const r = recheckResults(dir);
      io.stdout(opts.json ? `${JSON.stringify(r, null, 2)}\n` : formatRecheck(r));
      if (r.disagreements.length > 0) process.exitCode = EXIT.input;
    });

  program
    .command('pool')
    .description('list the unjudged (question, passage) pairs in the top of chosen rows of a results folder, most decisive first')
    .argument('<results>', 'results folder written by run')
    .option('--depth <n>', 'ranks pooled per row', '10')
    .option('--rows <which>', 'tier1, all, or comma-separated configuration ids', 'tier1')
    .option('-o, --out <file>', 'pool file to write', 'pool.jsonl')
    .option('--json', 'print the summary (pairs, pairs per question) as JSON')
    .action(async (results: string, opts: { depth: string; rows: string; out: string; json?: boolean }) => {
      if (!/^\d+$/.test(opts.depth) || Number(opts.depth) < 1)
        throw new HarnessError('USAGE', `--depth must be a whole number >= 1 (got ${opts.depth})`, { remedy: 'pass e.g. --depth 10' });
      const rows = opts.rows === 'tier1' || opts.rows === 'all' ? opts.rows : opts.rows.split(',').map((s) => s.trim()).filter((s) => s !== '');
      if (Array.isArray(rows) && rows.length === 0) throw new HarnessError('USAGE', '--rows is empty', { remedy: 'pass tier1, all, or configuration ids separated by commas' });
      const { poolFromResults } = await import('../label/pool.js');
      const { writePool } = await import('../label/formats.js');
      const r = await poolFromResults(results, { depth: Number(opts.depth), rows });
      const out = path.resolve(opts.out);
      writePool(out, r.header, r.pairs);
      for (const w of r.summary.warnings) io.stderr(`warning: ${w}\n`);
      if (opts.json) io.stdout(`${JSON.stringify({ ...r.summary, out }, null, 2)}\n`);
      else {
        const counts = Object.values(r.summary.perQuestion);
        const mean = counts.length ? counts.reduce((a, b) => a + b, 0) / counts.length : 0;
        io.stdout(
          `pool: ${r.summary.pairs} unjudged pair(s) over ${r.summary.questions} question(s) (mean ${mean.toFixed(1)}, max ${maxOf(counts, 0)} per question); ` +
            `level ${r.summary.level}, depth ${r.summary.depth}, ${r.summary.rows.length} row(s): ${r.summary.rows.join(', ')}; ` +
            `${r.summary.judgedSkipped} judged pair(s) left out\n` +
            `written: ${out}\nnext: retrieval-sweep label ${path.relative(process.cwd(), out) || out} --labels <the dataset's questions.jsonl or qrels/<split>.tsv>\n`,
        );
      }
    });

  program
    .command('label')
    .description('serve a local page (127.0.0.1, token in the address) to grade the pairs of a pool; judgments go to <labels>.judgments.jsonl')
    .argument('<pool>', 'pool file written by pool')
    .requiredOption('--labels <file>', "the dataset's labels file: questions.jsonl or a BEIR qrels/<split>.tsv")
    .option('--assessor <name>', 'who judges (default: $USER, else "assessor")')
    .option('--port <n>', 'port on 127.0.0.1 (0 picks a free one)', '0')
    .option('--scale <names>', 'comma-separated names of grades 0, 1, ... (default: not relevant,related,highly relevant,perfectly relevant)')
    .action(async (pool: string, opts: { labels: string; assessor?: string; port: string; scale?: string }) => {
      if (!/^\d+$/.test(opts.port)) throw new HarnessError('USAGE', `--port must be a whole number from 0 to 65535 (got ${opts.port})`, { remedy: 'pass --port 0 to pick a free port' });
      const { startLabelServer, mergeMessage } = await import('../label/server.js');
      const scale = opts.scale === undefined ? undefined : opts.scale.split(',').map((x) => x.trim());
      const server = await startLabelServer({
        pool,
        labels: opts.labels,
        assessor: opts.assessor ?? (process.env.USER || 'assessor'),
        port: Number(opts.port),
        ...(scale ? { scale } : {}),
      });
      for (const w of server.warnings) io.stderr(`warning: ${w}\n`);
      const st = server.state();
      io.stderr(`${st.total} pair(s), ${st.graded} already graded by ${st.assessor}; judgments log ${server.log.file}\n`);
      io.stdout(`${server.url}\n`);
      io.stderr('open the address above in a browser (nothing is opened for you); Ctrl-C merges the labels and stops\n');
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        const stop = (sig: NodeJS.Signals) => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve(sig);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await server.close();
      const end = server.state();
      const m = server.merge();
      io.stderr(`\n${signal}: stopped. ${end.graded} of ${end.total} pair(s) graded by ${end.assessor}.\n${mergeMessage(m)}\n`);
      for (const a of end.agreement) {
        io.stderr(`Cohen's kappa (linear) ${a.a} vs ${a.b}: ${Number.isNaN(a.weightedKappa) ? 'n/a' : a.weightedKappa.toFixed(3)} over ${a.n} pair(s)\n`);
      }
      if (m.conflicts.length > 0) {
        throw new HarnessError('LABEL_INVALID', `${m.conflicts.length} judgment(s) conflict with grades already in ${m.file} and were not written (listed in ${m.conflictsFile})`, {
          location: { file: m.file },
          remedy: 'decide each listed pair: edit the grade in the labels file, or re-grade the pair in the page to agree',
        });
      }
    });

  program
    .command('doctor')
    .description('verify a cache folder (checkpoints, cached vectors, GloVe tables, temporaries) and list what it would drop')
    .argument('<cacheDir>', "the config's cacheDir (default .cache/retrieval-sweep)")
    .option('--fix', 'drop what fails its checks (a sweep recomputes it)')
    .option('--json', 'print JSON {"dir", "checked", "findings", "fixed", "logs"}')
    .action(async (dir: string, opts: { fix?: boolean; json?: boolean }) => {
      const { doctorCache, formatDoctor } = await import('../run/doctor.js');
      const r = doctorCache(dir, { fix: Boolean(opts.fix) });
      io.stdout(opts.json ? `${JSON.stringify(r, null, 2)}\n` : formatDoctor(r));
      if (r.findings.length > 0 && !r.fixed) process.exitCode = EXIT.input;
    });

  program
    .command('schema')
    .description('write the JSON Schemas of a config and of a questions.jsonl line (for editor completion)')
    .option('-o, --out <dir>', 'folder to write config.schema.json and question.schema.json into', 'schema')
    .option('--stdout', 'print {"config": ..., "question": ...} instead of writing files')
    .action(async (opts: { out?: string; stdout?: boolean }) => {
      const { runSchemaCommand } = await import('./schema.js');
      const r = runSchemaCommand(opts);
      if (r.stdout) io.stdout(r.stdout);
      if (r.stderr) io.stderr(r.stderr);
    });

  registerLlmCommands(program, io);

  // A usage error prints commander's message, then the usage line of the command that failed.
  let active: Command = program;
  const track = (cmd: Command) => {
    cmd.hook('preAction', (_self, actionCommand) => {
      active = actionCommand;
    });
    cmd.configureOutput({
      writeOut: (s) => io.stdout(s),
      writeErr: (s) => io.stderr(s),
      outputError: (s, write) => write(`${nl(s)}${usageLine(cmd)}\n`),
    });
  };
  track(program);
  for (const c of program.commands) track(c);
  Object.defineProperty(program, 'activeCommand', { get: () => active });
  return program;
}

/**
 * Parses `argv` (as `process.argv`: node, script, args...), runs the command and returns the exit code
 * ({@link EXIT}); writes through `io`. Never calls process.exit (Ctrl-C during `run` aside).
 */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const program = buildProgram(io);
  try {
    process.exitCode = undefined;
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (e instanceof Interrupted) return EXIT.interrupted;
    if (isHarnessError(e, 'USAGE')) {
      const cmd = (program as unknown as { activeCommand: Command }).activeCommand;
      io.stderr(`error: ${e.format()}\n${usageLine(cmd)}\n`);
      return EXIT.usage;
    }
    if (isHarnessError(e)) {
      io.stderr(`error: ${e.format()}\n`);
      return EXIT.input;
    }
    // A full disk, a permission, a path through a file...: the user's to fix (issue 24), exit 1 naming the path.
    const resource = resourceError(e);
    if (resource) {
      io.stderr(`error: ${resource.format()}\n`);
      return EXIT.input;
    }
    io.stderr(
      `internal error: this is a bug in retrieval-sweep ${packageVersion()}; please report it with the command you ran ` +
        `and the text below:\n${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    return EXIT.internal;
  }
}

/** The command's entry: runs {@link runCli} and sets the exit code; the process then ends when its work is done. */
export async function main(argv: string[]): Promise<void> {
  const code = await runCli(argv);
  process.exitCode = code;
  // A model worker or handle left open must not keep a failed command alive.
  if (code !== EXIT.ok) setTimeout(() => process.exit(code), 5000).unref();
}
