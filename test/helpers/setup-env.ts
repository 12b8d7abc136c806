/**
 * Vitest setup (every test file): the default cache folder of configs that set no `cacheDir` is the repository's
 * `.cache/retrieval-sweep`, as before the default moved to the user's cache folder, so tests never write into the
 * real ~/.cache and a developer's RETRIEVAL_SWEEP_CACHE or XDG_CACHE_HOME cannot change what they read. Child
 * processes the tests start (the CLI, the packed tarball) inherit it.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

process.env.RETRIEVAL_SWEEP_CACHE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../.cache/retrieval-sweep');
