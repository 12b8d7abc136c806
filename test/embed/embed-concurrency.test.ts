/**
 * embedTexts with a provider that declares `concurrency`: up to that many embedBatch calls in flight, results taken in
 * call order (same vectors, cache rows and progress as one call at a time), and on a failure nothing keeps running.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddingCache, embeddingCacheKey } from '../../src/embed/cache.js';
import { embedTexts } from '../../src/embed/embed-texts.js';
import type { EmbeddingProvider, EmbedRole } from '../../src/embed/provider.js';

/** Vector of s: [s.length, first char code]. Each call finishes after `delayOf(call number)` ms. */
class SlowProvider implements EmbeddingProvider {
  readonly name = 'slow';
  readonly label = 'slow';
  readonly dimensions = 2;
  inFlight = 0;
  maxInFlight = 0;
  calls = 0;
  finished = 0;
  constructor(
    readonly concurrency: number,
    readonly delayOf: (call: number) => number,
    readonly failOn = -1,
  ) {}
  cacheKey(_role: EmbedRole): string {
    return 'slow{}';
  }
  async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    const call = this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((r) => setTimeout(r, this.delayOf(call)));
    this.inFlight--;
    this.finished++;
    if (call === this.failOn) throw new Error(`call ${call} failed`);
    return texts.map((t) => Float32Array.from([t.length, t.charCodeAt(0)]));
  }
  truncatedCount(): number {
    return 0;
  }
  describe(): Record<string, unknown> {
    return {};
  }
  async close(): Promise<void> {}
}

let dir: string;
let cache: EmbeddingCache;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-conc-'));
  cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
});
afterEach(() => {
  cache.close();
  rmSync(dir, { recursive: true, force: true });
});

// 10 distinct texts of lengths 10..1 (longest first = input order), batches of 2: 5 calls.
const texts = Array.from({ length: 10 }, (_, i) => String.fromCharCode(97 + i).repeat(10 - i));

describe('embedTexts with provider.concurrency', () => {
  it('keeps up to 3 calls in flight; later calls finishing first change nothing: vectors, progress in order', async () => {
    // Call c takes (5 - c) * 15 ms, so the calls finish in reverse order of starting.
    const p = new SlowProvider(3, (c) => (5 - c) * 15);
    const progress: number[] = [];
    const { vectors, stats } = await embedTexts(p, texts, 'document', { cache, batchSize: 2, onProgress: (d) => progress.push(d) });
    expect(p.calls).toBe(5);
    expect(p.maxInFlight).toBe(3);
    expect(vectors.map((v) => Array.from(v))).toEqual(texts.map((t) => [t.length, t.charCodeAt(0)]));
    expect(progress).toEqual([0, 2, 4, 6, 8, 10]);
    expect(stats.cacheMisses).toBe(10);
    // all 10 are in the cache
    let found = 0;
    cache.visit(texts.map((t) => embeddingCacheKey('slow{}', t)), () => found++);
    expect(found).toBe(10);
  });

  it('without concurrency: one call at a time', async () => {
    const p = new SlowProvider(1, () => 1);
    await embedTexts(p, texts, 'document', { batchSize: 2 });
    expect([p.calls, p.maxInFlight]).toEqual([5, 1]);
  });

  it('a failing call: the error is thrown after every call in flight has finished; batches before it are cached', async () => {
    // Width 3, call 1 fails quickly while calls 2 and 3 are still running (they take 40 ms).
    const p = new SlowProvider(3, (c) => (c === 1 ? 1 : 40), 1);
    await expect(embedTexts(p, texts, 'document', { cache, batchSize: 2 })).rejects.toThrow('call 1 failed');
    expect(p.inFlight).toBe(0);
    expect(p.finished).toBe(p.calls);
    expect(p.calls).toBe(4); // calls 0-2 started, call 3 started when call 0's result was taken; none after the failure
    let found = 0;
    cache.visit(texts.map((t) => embeddingCacheKey('slow{}', t)), () => found++);
    expect(found).toBe(2); // only call 0's batch was taken before the failure
  });

  it('a concurrency that is not a finite number ≥ 1 means 1 (NaN, 0, 0.5) or every batch at once (Infinity)', async () => {
    for (const [declared, width] of [[Number.NaN, 1], [0, 1], [0.5, 1], [2.5, 2], [Number.POSITIVE_INFINITY, 5]] as const) {
      const p = new SlowProvider(declared, () => 2);
      const { vectors } = await embedTexts(p, texts, 'document', { batchSize: 2 });
      expect([declared, p.calls, p.maxInFlight]).toEqual([declared, 5, width]);
      expect(vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length));
    }
  });

  it('a JavaScript provider whose embedBatch returns the array itself (no promise) still works', async () => {
    const p = new SlowProvider(2, () => 0);
    const plain = Object.assign(Object.create(p) as SlowProvider, {
      embedBatch: (batch: readonly string[]) => batch.map((t) => Float32Array.from([t.length, t.charCodeAt(0)])),
    });
    const { vectors } = await embedTexts(plain as unknown as EmbeddingProvider, texts, 'document', { batchSize: 3 });
    expect(vectors.map((v) => Array.from(v))).toEqual(texts.map((t) => [t.length, t.charCodeAt(0)]));
  });
});
