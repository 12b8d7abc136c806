/**
 * Where the cache goes (issue 22): config `cacheDir` (relative to the config file), then RETRIEVAL_SWEEP_CACHE, then
 * $XDG_CACHE_HOME/retrieval-sweep, then ~/.cache/retrieval-sweep.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CACHE_ENV, resolveCacheDir } from '../../src/config/cache-dir.js';
import { loadConfigFile, parseConfig } from '../../src/config/schema.js';

const work = mkdtempSync(path.join(tmpdir(), 'rs-cachedir-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('resolveCacheDir', () => {
  const home = '/home/ada';
  it('default: ~/.cache/retrieval-sweep; XDG_CACHE_HOME when absolute (a relative one is ignored, as the XDG spec says)', () => {
    expect(resolveCacheDir(undefined, '/cfg', {}, home)).toBe('/home/ada/.cache/retrieval-sweep');
    expect(resolveCacheDir(undefined, '/cfg', { XDG_CACHE_HOME: '/var/cache/ada' }, home)).toBe('/var/cache/ada/retrieval-sweep');
    expect(resolveCacheDir(undefined, '/cfg', { XDG_CACHE_HOME: 'rel/cache' }, home)).toBe('/home/ada/.cache/retrieval-sweep');
  });

  it('RETRIEVAL_SWEEP_CACHE beats XDG_CACHE_HOME and is relative to the working directory; empty means unset', () => {
    expect(resolveCacheDir(undefined, '/cfg', { [CACHE_ENV]: '/shared/rs', XDG_CACHE_HOME: '/var/cache/ada' }, home)).toBe('/shared/rs');
    expect(resolveCacheDir(undefined, '/cfg', { [CACHE_ENV]: 'here/rs' }, home)).toBe(path.resolve('here/rs'));
    expect(resolveCacheDir(undefined, '/cfg', { [CACHE_ENV]: '' }, home)).toBe('/home/ada/.cache/retrieval-sweep');
  });

  it("a config's cacheDir beats the environment and is relative to the config file's folder", () => {
    expect(resolveCacheDir('.cache/x', '/projects/p', { [CACHE_ENV]: '/shared/rs' }, home)).toBe('/projects/p/.cache/x');
    expect(resolveCacheDir('/abs/c', '/projects/p', {}, home)).toBe('/abs/c');
  });
});

describe('parseConfig and loadConfigFile resolve cacheDir to an absolute folder', () => {
  it('a config file with cacheDir: relative to the file, whatever the working directory', () => {
    const file = path.join(work, 'sub', 'c.yaml');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'dataset: { path: ../data }\ncacheDir: ../my-cache\n');
    expect(loadConfigFile(file).cacheDir).toBe(path.join(work, 'my-cache'));
  });

  it('without cacheDir: the test setup\'s RETRIEVAL_SWEEP_CACHE (the repository\'s .cache/retrieval-sweep), never ~/.cache', () => {
    const c = parseConfig({ dataset: { path: 'x' } });
    expect(c.cacheDir).toBe(path.resolve(process.env[CACHE_ENV]!));
    expect(c.cacheDir.endsWith(path.join('.cache', 'retrieval-sweep'))).toBe(true);
  });
});
