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
}

async function runCommand(configPath: string, opts: RunOptions, io: CliIo): Promise<void> {
  const { loadConfigFile } = await import('../config/schema.js');
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
  const sweepOptions: SweepOptions & { signal: AbortSignal } = { onEvent: progress.onEvent, signal: controller.signal };
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
    const best = analysis.best;
    const row = best ? result.configs[best.index] : undefined;
    const summary = {
      name: result.name,
      primaryMetric: analysis.primaryMetric,
      recommendation: best
        ? { id: best.id, mean: best.mean, low: best.low, high: best.high, config: row?.config ?? null }
        : null,
      tier1: analysis.tier1,
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
}

async function validateCommand(configPath: string, opts: { json?: boolean }, io: CliIo): Promise<void> {
  const { loadConfigFile } = await import('../config/schema.js');
  const { planSweep, formatPlan } = await import('../run/plan.js');
  const config = loadConfigFile(configPath);
  const plan = await planSweep(config);
  io.stdout(opts.json ? `${JSON.stringify(plan, null, 2)}\n` : formatPlan(plan));
}

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
    .argument('[config]', 'YAML config file', 'configs/default.yaml')
    .option('-o, --out <dir>', 'results folder (default: results/<name>)')
    .option('-q, --quiet', 'no progress output')
    .option('--json', 'print the summary (recommendation, tier 1, files written, timings) as one JSON object')
    .action(async (config: string, opts: RunOptions) => runCommand(config, opts, io));

  program
    .command('validate')
    .description('check the config, dataset and questions without running anything; print what the sweep would do')
    .argument('[config]', 'YAML config file', 'configs/default.yaml')
    .option('--json', 'print the plan as JSON')
    .action(async (config: string, opts: { json?: boolean }) => validateCommand(config, opts, io));

  program
    .command('evaluate')
    .description('score a TREC run file against TREC qrels (trec_eval -c conventions)')
    .argument('<qrels>', 'qrels file: qid 0 docno grade')
    .argument('<run>', 'run file: qid Q0 docno rank score tag')
    .option('-m, --measure <name...>', 'measures such as ndcg@10 recall@5 r_precision (default: a standard set)')
    .option('--per-query', 'add a row per question')
    .option('--json', 'print JSON {"mean", "per_query", "excluded"}')
    .option('--threshold <grade>', 'grades at or above this count as relevant', '1')
    .action(async (qrels: string, run: string, opts: { measure?: string[]; perQuery?: boolean; json?: boolean; threshold: string }) => {
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
      });
      if (out.stderr) io.stderr(nl(out.stderr));
      io.stdout(nl(out.stdout));
    });

  program
    .command('compare')
    .description('paired comparison of two finished sweeps on the same questions')
    .argument('<a>', 'results folder A')
    .argument('<b>', 'results folder B')
    .option('--json', 'print JSON')
    .option('--seed <n>', 'random seed for the bootstrap and permutation test', '42')
    .action(async (a: string, b: string, opts: { json?: boolean; seed: string }) => {
      if (!/^-?\d+$/.test(opts.seed))
        throw new HarnessError('USAGE', `--seed must be a whole number (got ${opts.seed})`, { remedy: 'pass e.g. --seed 42' });
      const { loadSweepResult } = await import('../run/artifacts.js');
      const { compareSweeps } = await import('../report/compare.js');
      const ra = loadSweepResult(a);
      const rb = loadSweepResult(b);
      if (ra.level !== rb.level)
        throw new HarnessError('USAGE', `${a} is scored at level ${ra.level} and ${b} at level ${rb.level}: their measures differ`, {
          remedy: 'compare two sweeps scored at the same level',
        });
      const out = compareSweeps(ra, rb, { seed: Number(opts.seed) });
      io.stdout(opts.json ? `${JSON.stringify(out.json, null, 2)}\n` : nl(out.text));
    });

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
    .command('doctor')
    .description('verify a cache folder (checkpoints, cached vectors, GloVe tables, temporaries) and list what it would drop')
    .argument('<cacheDir>', "the config's cacheDir (default .cache/retrieval-sweep)")
    .option('--fix', 'drop what fails its checks (a sweep recomputes it)')
    .option('--json', 'print JSON {"dir", "checked", "findings", "fixed"}')
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
