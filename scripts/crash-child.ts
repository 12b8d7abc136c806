/**
 * A sweep that kills itself at a chosen point: the child process of the kill tests (test/run/crash-kill.test.ts) and
 * of scripts/kill-points.ts. Runs what `retrieval-sweep run` runs (lock, checks, sweep, statistics, artifacts) and
 * sends itself SIGKILL — no cleanup, no exit handlers, as with kill -9 or an out-of-memory stop — at the chosen point.
 *
 *   node --import tsx scripts/crash-child.ts CONFIG.(yaml|json) OUT [--kill-at STAGE[#N]] [--kill-after-ms MS] [--no-resume]
 *
 * - `--kill-at [KIND:]STAGE[#N]`: the N-th (default 1st) sweep event whose stage is exactly STAGE (`chunk`, `keyword`,
 *   `embed glove-100d`, `score`, ...), counting only events of KIND (`stage` or `progress`) when given; `write` kills
 *   inside writeArtifacts, once the temporary folder holds the reports and manifest.json.
 * - `--kill-after-ms MS`: after MS milliseconds of wall time.
 * Every event is printed to stderr as `event <ms> <kind> <stage> [done/total]`. A JSON config is a resolved-config
 * input for parseConfig (the tests write one); a YAML config goes through loadConfigFile.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfigFile, parseConfig } from '../src/config/schema.js';
import { runSweep } from '../src/run/sweep.js';
import { checkOutputDir, checkOutputOutsideDataset, writeArtifacts } from '../src/run/artifacts.js';
import { acquireOutputLock } from '../src/run/lock.js';
import { analyze, withStatistics } from '../src/report/analyze.js';
import { renderReports } from '../src/report/render.js';

const args = process.argv.slice(2);
const [configPath, out] = args;
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const killAt = opt('--kill-at');
const killAfter = opt('--kill-after-ms');
const resume = !args.includes('--no-resume');
const t0 = Date.now();
const die = (why: string) => {
  process.stderr.write(`killing myself at ${Date.now() - t0} ms: ${why}\n`);
  process.kill(process.pid, 'SIGKILL');
};
if (killAfter !== undefined) setTimeout(() => die(`after ${killAfter} ms`), Number(killAfter));
const killKind = killAt && /^(stage|progress):/.test(killAt) ? killAt.slice(0, killAt.indexOf(':')) : undefined;
const killSpec = killKind ? killAt!.slice(killKind.length + 1) : killAt;
const [killStage, killNth] = killSpec ? [killSpec.split('#')[0], Number(killSpec.split('#')[1] ?? 1)] : [undefined, 0];
let seen = 0;

const config = configPath.endsWith('.json')
  ? parseConfig(JSON.parse(readFileSync(configPath, 'utf8')), path.resolve(configPath))
  : loadConfigFile(configPath);
const outDir = path.resolve(out);
checkOutputOutsideDataset(config, outDir);
const release = acquireOutputLock(outDir);
checkOutputDir(outDir);
const swept = await runSweep(config, {
  resume,
  onEvent: (e) => {
    process.stderr.write(`event ${Date.now() - t0} ${e.kind} ${'stage' in e ? e.stage : ''}${e.kind === 'progress' ? ` ${e.done}/${e.total}` : ''}\n`);
    if (killStage !== undefined && 'stage' in e && (!killKind || e.kind === killKind) && e.stage === killStage && ++seen === killNth) die(`${e.kind} ${e.stage}`);
  },
});
const analysis = analyze(swept.result, { seed: config.statistics.seed, resamples: config.statistics.resamples, alpha: config.statistics.alpha, maxResamples: config.statistics.maxResamples });
const result = withStatistics(swept.result, analysis);
const rendered = renderReports(result, analysis) as unknown as Record<string, string>;
if (killStage === 'write') {
  // writeArtifacts reads `questions` after the temporary folder holds the reports and manifest.json.
  const questions = result.questions;
  Object.defineProperty(result, 'questions', { enumerable: true, get: () => (die('inside writeArtifacts'), questions) });
}
writeArtifacts(outDir, result, rendered);
release();
process.stderr.write(`done ${Date.now() - t0} ms\n`);
process.stdout.write(JSON.stringify({ ms: Date.now() - t0, timings: swept.timings }) + '\n');
