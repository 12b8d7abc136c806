/**
 * Where the embedding cache, the model tables (GloVe's binary table), checkpoints and downloaded models live. One
 * folder per user by default, so every project and working directory shares it: a run from another folder does not
 * rebuild the 135 MB GloVe table or embed texts again.
 */
import os from 'node:os';
import path from 'node:path';

/** The environment variable that overrides the default cache folder (below a config's `cacheDir`). */
export const CACHE_ENV = 'RETRIEVAL_SWEEP_CACHE';

/**
 * The cache folder, absolute. In order of precedence:
 * 1. `written` (a config's `cacheDir`), relative to `baseDir` (the config file's folder; the working directory for an
 *    in-memory config);
 * 2. `env.RETRIEVAL_SWEEP_CACHE`, relative to the working directory;
 * 3. `$XDG_CACHE_HOME/retrieval-sweep` when `XDG_CACHE_HOME` is an absolute path (the XDG Base Directory
 *    specification ignores a relative one);
 * 4. `<home>/.cache/retrieval-sweep`.
 * Empty strings count as unset. Pure given its arguments.
 * @param env defaults to `process.env`; @param home defaults to `os.homedir()`.
 */
export function resolveCacheDir(
  written: string | undefined,
  baseDir: string,
  env: Record<string, string | undefined> = process.env,
  home: string = os.homedir(),
): string {
  if (written !== undefined && written.trim() !== '') return path.resolve(baseDir, written);
  const fromEnv = env[CACHE_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return path.resolve(fromEnv);
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, 'retrieval-sweep');
  return path.join(home, '.cache', 'retrieval-sweep');
}
