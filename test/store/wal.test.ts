/**
 * A killed run's SQLite write-ahead log (issue 24 §3, found by scripts/kill-sweep.ts: a run killed at scoring left
 * `embeddings.sqlite-wal` and `-shm`, and the resumed run, which read every unit back from checkpoints, never opened
 * the cache, so they stayed). mergeLeftoverWal merges the log into the database (its rows kept) and the side files go.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergeLeftoverWal } from '../../src/store/wal.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as typeof import('better-sqlite3');

describe('mergeLeftoverWal', () => {
  it('a writer killed with SIGKILL leaves -wal and -shm; merging keeps its committed rows and removes both', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'rs-wal-')), 'cache.sqlite');
    const writer = `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(file)});
      db.pragma('journal_mode = WAL'); db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)');
      const put = db.prepare('INSERT INTO t VALUES (?, ?)'); for (let i = 1; i <= 3; i++) put.run('k' + i, i);
      process.kill(process.pid, 'SIGKILL');`;
    const r = spawnSync(process.execPath, ['-e', writer]);
    expect(r.signal).toBe('SIGKILL');
    expect([existsSync(`${file}-wal`), existsSync(`${file}-shm`)]).toEqual([true, true]);
    expect(mergeLeftoverWal(file)).toBe(true);
    expect([existsSync(`${file}-wal`), existsSync(`${file}-shm`)]).toEqual([false, false]);
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT SUM(v) AS s FROM t').get()).toEqual({ s: 1 + 2 + 3 });
    db.close();
  });

  it('no log, or no database: nothing to do', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-wal-'));
    expect(mergeLeftoverWal(path.join(dir, 'missing.sqlite'))).toBe(true);
  });
});
