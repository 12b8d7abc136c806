/**
 * How to start a worker thread whose code is a module beside the caller: the `.ts` source under the tsx loader when
 * the caller itself runs from source (tsx, vitest), else the compiled `.js` in dist/.
 */
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * The file and `execArgv` for `new Worker(...)` (or piscina) of the module `base` (a name without extension, e.g.
 * `./worker`) resolved against `callerUrl` (the caller's `import.meta.url`).
 */
export function workerStart(base: string, callerUrl: string): { filename: string; execArgv: string[] } {
  if (callerUrl.endsWith('.ts')) {
    const tsx = pathToFileURL(createRequire(callerUrl).resolve('tsx')).href;
    return { filename: fileURLToPath(new URL(`${base}.ts`, callerUrl)), execArgv: ['--import', tsx] };
  }
  return { filename: fileURLToPath(new URL(`${base}.js`, callerUrl)), execArgv: [] };
}

/**
 * Starts a worker thread running the module `base` beside the caller (see {@link workerStart}); it talks over
 * `parentPort` (no `workerData`).
 * From source, tsx's `--import` hooks a worker's `require` from a CommonJS file but neither its `import()` nor an
 * entry file given by path, so the worker starts in `worker-boot.cjs` (beside this file), which requires the `.ts`
 * module (tsx compiles it); from dist/ the compiled `.js` is the entry itself.
 */
export function startWorker(base: string, callerUrl: string): Worker {
  const { filename, execArgv } = workerStart(base, callerUrl);
  if (!filename.endsWith('.ts')) return new Worker(filename, { execArgv });
  const boot = fileURLToPath(new URL('./worker-boot.cjs', import.meta.url));
  return new Worker(boot, { execArgv, workerData: { module: filename } });
}
