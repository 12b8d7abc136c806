/**
 * Issue 24 §3: resource errors are the user's (exit 1, naming the path), and temporaries of dead runs are removed by
 * the next run (checkpoints, the GloVe table).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RESOURCE_ERRNOS, resourceError, resourceFailure } from '../../src/store/resource.js';
import { processAlive, removeDeadTemporaries, tempPathFor } from '../../src/store/temp.js';
import { CheckpointStore } from '../../src/run/checkpoint.js';
import { HarnessError } from '../../src/errors.js';

/** A pid that has exited (a child run to completion). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

function sysError(code: string, file: string, syscall = 'write'): Error {
  return Object.assign(new Error(`${code}: something, ${syscall} '${file}'`), { code, path: file, syscall, errno: -1 });
}

describe('resourceError', () => {
  for (const code of ['ENOSPC', 'EACCES', 'ENOTDIR', 'EROFS', 'EMFILE']) {
    it(`${code} (also inside a cause chain) becomes RESOURCE_UNAVAILABLE naming the path and a remedy`, () => {
      const raw = sysError(code, '/data/out/matrix.csv');
      for (const e of [raw, new Error('wrapped', { cause: raw })]) {
        const h = resourceError(e)!;
        expect(h).toBeInstanceOf(HarnessError);
        expect(h.code).toBe('RESOURCE_UNAVAILABLE');
        expect(h.message).toBe(`${code}: ${RESOURCE_ERRNOS[code].what} at /data/out/matrix.csv (write)`);
        expect(h.remedy).toBe(RESOURCE_ERRNOS[code].remedy);
      }
    });
  }
  it('other errors and HarnessErrors are left alone', () => {
    expect(resourceError(new TypeError('x is undefined'))).toBe(undefined);
    expect(resourceError(sysError('ECONNRESET', '/x'))).toBe(undefined);
    expect(resourceError(new HarnessError('CACHE_FAILED', 'x', { cause: sysError('ENOSPC', '/x') }))).toBe(undefined);
  });
});

describe('resourceFailure names the config key that chose the folder', () => {
  const places = [
    { dir: '/data/results', key: '--out' },
    { dir: '/data/cache', key: 'cacheDir' },
  ];
  it('the place whose folder holds the path, with a remedy naming its key', () => {
    const h = resourceFailure(sysError('ENOSPC', '/data/cache/checkpoints/k.json'), places)!;
    expect(h.code).toBe('RESOURCE_UNAVAILABLE');
    expect(h.message).toBe(`ENOSPC: ${RESOURCE_ERRNOS.ENOSPC.what} at /data/cache/checkpoints/k.json (write), under cacheDir /data/cache`);
    expect(h.remedy).toBe('free disk space there, or point cacheDir at a disk with room');
  });
  it('a write without a path (ENOSPC on a descriptor) is named by the only place; with two places by none', () => {
    const raw = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
    expect(resourceFailure(raw, [places[0]])!.message).toBe(`ENOSPC: ${RESOURCE_ERRNOS.ENOSPC.what} (write), under --out /data/results`);
    expect(resourceFailure(raw, places)!.remedy).toBe(RESOURCE_ERRNOS.ENOSPC.remedy);
  });
  it("SQLite's SQLITE_FULL inside a cache's HarnessError is a full disk at the cache's file", () => {
    const sqlite = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const wrapped = new HarnessError('CACHE_FAILED', 'embedding cache: write failed', { location: { file: '/data/cache/embeddings.sqlite' }, cause: sqlite });
    expect(resourceFailure(wrapped, places)!.message).toBe(`ENOSPC: ${RESOURCE_ERRNOS.ENOSPC.what} at /data/cache/embeddings.sqlite, under cacheDir /data/cache`);
    expect(resourceFailure(new HarnessError('CACHE_FAILED', 'bad schema'), places)).toBe(undefined);
  });
});

describe('temporaries of dead runs', () => {
  it('tempPathFor names this process; removeDeadTemporaries removes dead owners only', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-temp-'));
    const mine = tempPathFor(path.join(dir, 'a.json'));
    expect(path.basename(mine)).toMatch(new RegExp(`^a\\.json\\.tmp-${process.pid}-\\d+$`));
    const dead = path.join(dir, `b.json.tmp-${deadPid()}-123`);
    const other = path.join(dir, 'c.json');
    for (const f of [mine, dead, other]) writeFileSync(f, 'x');
    expect(processAlive(process.pid)).toBe(true);
    expect(removeDeadTemporaries(dir)).toEqual([dead]);
    expect([existsSync(mine), existsSync(dead), existsSync(other)]).toEqual([true, false, true]);
    expect(removeDeadTemporaries(path.join(dir, 'missing'))).toEqual([]);
  });

  it('opening a checkpoint store removes a killed run\'s half-written checkpoint', () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'rs-temp-'));
    const cp = path.join(cacheDir, 'checkpoints');
    mkdirSync(cp);
    const half = path.join(cp, `abc.json.tmp-${deadPid()}-1`);
    writeFileSync(half, '{"depth":');
    const store = new CheckpointStore(cacheDir);
    expect(store.removedTemporaries).toEqual([half]);
    expect(existsSync(half)).toBe(false);
    store.put('k', { lists: [], depth: 1, buildSeconds: 0, queryMs: 0 });
    expect(store.get('k', 1)).toEqual({ lists: [], depth: 1, buildSeconds: 0, queryMs: 0 });
  });
});

describe('a checkpoint write that fails', () => {
  it('throws with its errno and leaves no temporary behind (the rename into a folder fails after the write)', () => {
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'rs-temp-'));
    const cp = path.join(cacheDir, 'checkpoints');
    mkdirSync(path.join(cp, 'k.json', 'inside'), { recursive: true });
    const store = new CheckpointStore(cacheDir);
    expect(() => store.put('k', { lists: [], depth: 1, buildSeconds: 0, queryMs: 0 })).toThrow(expect.objectContaining({ syscall: 'rename' }));
    expect(readdirSync(cp)).toEqual(['k.json']);
  });
});

describe('a lock path that is a folder', () => {
  it('is OUTPUT_INVALID naming the folder, not "another run holds it"', async () => {
    const { acquireOutputLock, lockFileOf } = await import('../../src/run/lock.js');
    const parent = mkdtempSync(path.join(tmpdir(), 'rs-lockdir-'));
    const out = path.join(parent, 'results');
    mkdirSync(lockFileOf(out));
    let err: unknown;
    try {
      acquireOutputLock(out);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'OUTPUT_INVALID' });
    expect((err as Error).message).toBe(`the lock path ${lockFileOf(out)} is a folder, not a lock file`);
  });
});
