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
 * - `--kill-at unit:KIND#N`: when the N-th unit of kind KIND (`chunking`, `keyword`, `embedding`, `dense`, `fusion`,
 *   `external`, `run`, `rerank`, `scoring`) has produced its output, before the executor stores its checkpoint (the
 *   handlers of src/run/units/ are wrapped; only this script does that).
 * - `--kill-at write:REGEX#N`: right after the N-th write to a file whose path matches REGEX (`writeFileSync` by path,
 *   or `writeSync` on a descriptor `openSync` opened for such a path): a temporary written, not yet renamed
 *   (`checkpoints/.*\.tmp-`), or one part of the GloVe table written (`\.f32bin\.tmp-#5`: the matrix, not the words).
 *   The `node:fs` functions are wrapped and `syncBuiltinESMExports` makes the modules' named imports see the wrappers.
 * - `--kill-at rename:REGEX#N`: right before the N-th `renameSync` whose destination matches REGEX (e.g. `rename:/out$`
 *   kills between writeArtifacts' two renames: the previous results moved to `<out>.old-*`, the new ones not in place).
 * - `--kill-at cache-put#N`: right after the N-th `EmbeddingCache.put` committed (rows in the WAL, not yet
 *   checkpointed into the database file).
 * - `--kill-after-ms MS`: after MS milliseconds of wall time.
 * Every event is printed to stderr as `event <ms> <kind> <stage> [done/total]`. A JSON config is a resolved-config
 * input for parseConfig (the tests write one); a YAML config goes through loadConfigFile.
 */
import fs, { readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { UNIT_KINDS } from '../src/run/units/index.js';
import type { UnitKindHandler } from '../src/run/units/types.js';
import { EmbeddingCache } from '../src/embed/cache.js';
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

// Kill points inside the work rather than at an event (see the module comment).
const hook = killAt && /^(unit|write|rename):/.test(killAt) ? killAt.slice(0, killAt.indexOf(':')) : killAt?.startsWith('cache-put') ? 'cache-put' : undefined;
const hookArg = hook && hook !== 'cache-put' ? killAt!.slice(hook.length + 1).replace(/#\d+$/, '') : undefined;
const hookNth = hook ? Number(/#(\d+)$/.exec(killAt!)?.[1] ?? 1) : 0;
let hookSeen = 0;
const hit = (why: string) => {
  if (++hookSeen === hookNth) die(why);
};
if (hook === 'unit') {
  const h = UNIT_KINDS.get(hookArg as never) as UnitKindHandler | undefined;
  if (!h) throw new Error(`--kill-at unit:${hookArg}: no such unit kind (${[...UNIT_KINDS.keys()].join(', ')})`);
  const run = h.run.bind(h);
  (h as { run: UnitKindHandler['run'] }).run = async (...a) => {
    const out = await run(...a);
    hit(`unit ${a[0].id} done, not saved`);
    return out;
  };
}
if (hook === 'write') {
  const re = new RegExp(hookArg!);
  // Descriptors opened for a matching path (a descriptor number is reused once closed: every open updates the map).
  const fds = new Map<number, string>();
  let fdWrites = 0;
  const { openSync, writeSync, writeFileSync } = fs;
  fs.openSync = ((p: fs.PathLike, ...rest: unknown[]) => {
    const fd = (openSync as (...x: unknown[]) => number)(p, ...rest);
    if (re.test(String(p))) fds.set(fd, String(p));
    else fds.delete(fd);
    return fd;
  }) as typeof fs.openSync;
  fs.writeSync = ((fd: number, ...rest: unknown[]) => {
    const n = (writeSync as (...x: unknown[]) => number)(fd, ...rest);
    if (fds.has(fd)) {
      fdWrites++;
      hit(`write to ${fds.get(fd)}`);
    }
    return n;
  }) as typeof fs.writeSync;
  // writeFileSync of a path goes through fs.openSync and fs.writeSync (counted there) unless Node takes a fast path.
  fs.writeFileSync = ((p: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
    const before = fdWrites;
    (writeFileSync as (...x: unknown[]) => void)(p, ...rest);
    if (fdWrites === before && typeof p !== 'number' && re.test(String(p))) hit(`write to ${String(p)}`);
  }) as typeof fs.writeFileSync;
  syncBuiltinESMExports();
}
if (hook === 'rename') {
  const re = new RegExp(hookArg!);
  const { renameSync } = fs;
  fs.renameSync = ((from: fs.PathLike, to: fs.PathLike) => {
    if (re.test(String(to))) hit(`rename ${String(from)} -> ${String(to)}`);
    renameSync(from, to);
  }) as typeof fs.renameSync;
  syncBuiltinESMExports();
}
if (hook === 'cache-put') {
  const put = EmbeddingCache.prototype.put;
  EmbeddingCache.prototype.put = function (this: EmbeddingCache, entries) {
    put.call(this, entries);
    hit(`embedding cache put of ${entries.length} vectors`);
  };
}

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
    if (!hook && killStage !== undefined && 'stage' in e && (!killKind || e.kind === killKind) && e.stage === killStage && ++seen === killNth) die(`${e.kind} ${e.stage}`);
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
