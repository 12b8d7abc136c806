/**
 * lanceThreadEnv (src/retrieve/lancedb.ts): the LANCE_* settings that keep LanceDB 0.31.0's FTS build out of its
 * one-thread-pool deadlock (issue 26, lancedb/lancedb#3568). The rule: threads = max(2, cpus − reservation), shards =
 * min(lance's default ⌊(threads + reservation) / 2⌋ clamped to [1, threads], threads − 1); a user's values win. The hang
 * itself is reproduced by scripts/lancedb-fts-hang.ts (too slow for a unit test: about 10 s of index build).
 */
import { describe, expect, it } from 'vitest';
import { lanceThreadEnv } from '../../src/retrieve/lancedb.js';

describe('lanceThreadEnv', () => {
  it('on 2 CPUs (lance default: max(1, 2 − 2) = 1 pool thread, the deadlock) gives 2 threads and 1 FTS shard', () => {
    expect(lanceThreadEnv({}, 2)).toEqual({ LANCE_CPU_THREADS: String(Math.max(2, 2 - 2)), LANCE_FTS_NUM_SHARDS: String(Math.min(Math.floor((2 + 2) / 2), 2 - 1)) });
  });

  it('on 1 CPU the pool still gets 2 threads (oversubscribed, never one)', () => {
    expect(lanceThreadEnv({}, 1)).toEqual({ LANCE_CPU_THREADS: '2', LANCE_FTS_NUM_SHARDS: '1' });
  });

  it('on 4 CPUs: 2 threads, and lance would run ⌊(2 + 2) / 2⌋ = 2 shards, one too many: 1', () => {
    expect(lanceThreadEnv({}, 4)).toEqual({ LANCE_CPU_THREADS: String(4 - 2), LANCE_FTS_NUM_SHARDS: String(2 - 1) });
  });

  it("on 16 CPUs both values are lance's own defaults: 14 threads, ⌊(14 + 2) / 2⌋ = 8 shards", () => {
    expect(lanceThreadEnv({}, 16)).toEqual({ LANCE_CPU_THREADS: String(16 - 2), LANCE_FTS_NUM_SHARDS: String(Math.floor((14 + 2) / 2)) });
  });

  it("a user's LANCE_CPU_THREADS is kept and the shards follow it: 3 threads → min(⌊5 / 2⌋, 2) = 2", () => {
    expect(lanceThreadEnv({ LANCE_CPU_THREADS: '3' }, 2)).toEqual({ LANCE_FTS_NUM_SHARDS: String(Math.min(Math.floor((3 + 2) / 2), 3 - 1)) });
  });

  it('a user-chosen single thread is respected and no shard count is invented (nothing safe to choose)', () => {
    expect(lanceThreadEnv({ LANCE_CPU_THREADS: '1' }, 8)).toEqual({});
  });

  it("LANCE_IO_CORE_RESERVATION changes lance's pool size: 8 CPUs − 4 = 4 threads, ⌊(4 + 4) / 2⌋ = 4 → 3 shards", () => {
    expect(lanceThreadEnv({ LANCE_IO_CORE_RESERVATION: '4' }, 8)).toEqual({ LANCE_CPU_THREADS: String(8 - 4), LANCE_FTS_NUM_SHARDS: String(4 - 1) });
  });

  it('both set by the user: nothing is written', () => {
    expect(lanceThreadEnv({ LANCE_CPU_THREADS: '2', LANCE_FTS_NUM_SHARDS: '2' }, 2)).toEqual({});
  });
});
